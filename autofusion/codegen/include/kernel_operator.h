/*
 * kernel_operator.h: a CPU emulation of the subset of Ascend C that afc emits.
 *
 * Generated kernels include "kernel_operator.h" unchanged; with this header on the
 * include path they compile with g++ -std=c++17 and run on the host, one block after
 * another, like CANN's CPU twin debugging mode (ascend.md 2.13). Signatures follow the
 * CANN 8.x spelling (ascend.md 2.1-2.10). The emulation never accepts what the
 * hardware forbids: capacity, alignment, queue misuse, data paths, unsynchronised
 * pipes, unsupported types and chip features abort with one line
 *
 *     ascendc-emu: error: block 3 of 8: <API>: <what is wrong>
 *
 * and where the hardware silently does something else (a DataCopy that is not a
 * multiple of 32 bytes copies the truncated count), the emulation does the same
 * (or, with ChipConfig::strictTruncation, reports it).
 *
 * Configuration: the chip (usable buffer sizes, DataCopyPad, queue buffers per
 * position, ...) comes from AscendC::emu::SetChipConfig(), or at compile time from the
 * ASCENDC_EMU_* macros below (defaults: Ascend910B1, ascend.md 1.2).
 */
#ifndef AFC_ASCENDC_EMU_KERNEL_OPERATOR_H
#define AFC_ASCENDC_EMU_KERNEL_OPERATOR_H

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef ASCENDC_CPU_DEBUG
#define ASCENDC_CPU_DEBUG 1
#endif

// In CPU mode the address-space and function qualifiers are empty (ascend.md 2.13)
#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __ca__
#define __cb__
#define __cc__
#define __cbuf__
#define __fbuf__
#define __ssbuf__
// GM_ADDR is `__gm__ uint8_t*` (ascend.md 2.2)
#define GM_ADDR __gm__ uint8_t*

// Usable bytes per on-chip buffer; defaults are Ascend910B1's (autofusion/hardware/chips.toml)
#ifndef ASCENDC_EMU_UB_SIZE
#define ASCENDC_EMU_UB_SIZE 188160
#endif
#ifndef ASCENDC_EMU_L1_SIZE
#define ASCENDC_EMU_L1_SIZE 524032
#endif
#ifndef ASCENDC_EMU_L0A_SIZE
#define ASCENDC_EMU_L0A_SIZE 65536
#endif
#ifndef ASCENDC_EMU_L0B_SIZE
#define ASCENDC_EMU_L0B_SIZE 65536
#endif
#ifndef ASCENDC_EMU_L0C_SIZE
#define ASCENDC_EMU_L0C_SIZE 131072
#endif
#ifndef ASCENDC_EMU_ARCH
#define ASCENDC_EMU_ARCH 2201
#endif

// ------------------------------------------------------------------------------------
// half and bfloat16_t: 16-bit storage, round-to-nearest-even conversions
// ------------------------------------------------------------------------------------

namespace AscendC {
namespace emu {

inline uint32_t FloatBits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
}

inline float BitsFloat(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
}

// float -> IEEE binary16, round to nearest even; NaN stays (quiet) NaN
inline uint16_t FloatToHalfBits(float value)
{
    uint32_t f = FloatBits(value);
    const uint32_t sign = f & 0x80000000u;
    f ^= sign;
    uint16_t out;
    if (f >= (143u << 23)) {  // >= 65536 (rounds to inf), inf or NaN
        out = f > (255u << 23) ? 0x7E00 : 0x7C00;
    } else if (f < (113u << 23)) {  // subnormal or zero: align the mantissa with a magic add
        const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
        out = static_cast<uint16_t>(FloatBits(BitsFloat(f) + BitsFloat(magic)) - magic);
    } else {
        const uint32_t odd = (f >> 13) & 1u;
        f += (static_cast<uint32_t>(15 - 127) << 23) + 0xFFFu + odd;
        out = static_cast<uint16_t>(f >> 13);
    }
    return static_cast<uint16_t>(out | (sign >> 16));
}

inline float HalfBitsToFloat(uint16_t h)
{
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1Fu;
    const uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0) {
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 31) {
        return BitsFloat(sign | 0x7F800000u | (mantissa << 13));
    }
    return BitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// float -> bfloat16, round to nearest even (the upper 16 bits of a float)
inline uint16_t FloatToBf16Bits(float value)
{
    const uint32_t f = FloatBits(value);
    if ((f & 0x7FFFFFFFu) > 0x7F800000u) {
        return static_cast<uint16_t>((f >> 16) | 0x40u);
    }
    return static_cast<uint16_t>((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
}

inline float Bf16BitsToFloat(uint16_t b)
{
    return BitsFloat(static_cast<uint32_t>(b) << 16);
}

}  // namespace emu
}  // namespace AscendC

// IEEE binary16 (the `half` type of the Ascend compiler)
struct half {
    uint16_t bits = 0;
    half() = default;
    half(float value) : bits(AscendC::emu::FloatToHalfBits(value)) {}
    template <typename U,
              typename = std::enable_if_t<std::is_arithmetic<U>::value && !std::is_same<U, float>::value>>
    half(U value) : half(static_cast<float>(value))
    {
    }
    operator float() const
    {
        return AscendC::emu::HalfBitsToFloat(bits);
    }
    static half FromBits(uint16_t b)
    {
        half h;
        h.bits = b;
        return h;
    }
};

// bfloat16 (8 exponent bits, 7 mantissa bits)
struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    bfloat16_t(float value) : bits(AscendC::emu::FloatToBf16Bits(value)) {}
    template <typename U,
              typename = std::enable_if_t<std::is_arithmetic<U>::value && !std::is_same<U, float>::value>>
    bfloat16_t(U value) : bfloat16_t(static_cast<float>(value))
    {
    }
    operator float() const
    {
        return AscendC::emu::Bf16BitsToFloat(bits);
    }
    static bfloat16_t FromBits(uint16_t b)
    {
        bfloat16_t h;
        h.bits = b;
        return h;
    }
};

// ------------------------------------------------------------------------------------
// Enums and small types of the API (ascend.md 1.7, 2.2, 2.8, 2.9)
// ------------------------------------------------------------------------------------

// pipes of an AI Core (ascend.md 2.9)
enum pipe_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX, PIPE_ALL };

enum event_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

// kernel types for KERNEL_TASK_TYPE_DEFAULT (ascend.md 2.2)
enum KernelMetaType {
    KERNEL_TYPE_AIV_ONLY = 0,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
};

namespace AscendC {

enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC,
    SPM,
    SHM = SPM,
    TSCM,
    C2PIPE2GM,
    C2PIPE2LOCAL,
    MAX,
};
using QuePosition = TPosition;

enum class HardEvent : uint8_t {
    MTE2_MTE1,
    MTE1_MTE2,
    MTE1_M,
    M_MTE1,
    MTE2_V,
    V_MTE2,
    MTE3_V,
    V_MTE3,
    M_V,
    V_M,
    V_V,
    MTE3_MTE1,
    MTE1_MTE3,
    MTE1_V,
    MTE2_M,
    M_MTE2,
    V_MTE1,
    M_FIX,
    FIX_M,
    MTE3_MTE2,
    MTE2_MTE3,
    S_V,
    V_S,
    S_MTE2,
    MTE2_S,
    S_MTE3,
    MTE3_S,
    MTE2_FIX,
    FIX_MTE2,
    FIX_S,
    M_S,
    FIX_MTE3,
    MTE1_FIX,
    FIX_MTE1,
    FIX_FIX,
    MAX,
};

using TEventID = int8_t;

// RoundMode, CMPMODE, SELMODE (asc-devkit kernel_utils_mode.h, ascend.md 2.8)
enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

enum class KernelMode : uint8_t { MIX_MODE = 0, AIC_MODE, AIV_MODE };

// ------------------------------------------------------------------------------------
// Emulator state: chip configuration, on-chip memories, allocations, pipes
// ------------------------------------------------------------------------------------

namespace emu {

enum class Space : int { GM = 0, UB, L1, L0A, L0B, L0C, BT, FB, COUNT };
constexpr int kSpaces = static_cast<int>(Space::COUNT);

inline const char* SpaceName(Space s)
{
    static const char* const names[] = {"GM", "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"};
    return names[static_cast<int>(s)];
}

// what one chip allows; the afc harness fills it from autofusion/hardware/chips.toml
struct ChipConfig {
    const char* name;
    int arch;                        // __NPU_ARCH__: 1001 (910), 2002 (310P), 2201 (910B)
    uint64_t capacity[kSpaces];      // usable bytes per space (GM: unchecked)
    uint32_t alignment[kSpaces];     // start-address alignment per space (ascend.md 1.5)
    int queueBuffersPerPosition;     // TQue buffers per TPosition: 8, or 4 on 910 (ascend.md 2.4)
    int maxBuffersPerPipe;           // buffers per TPipe: 64 (ascend.md 2.4)
    bool dataCopyPad;                // DataCopyPad exists (A2/A3/310B, ascend.md 2.7)
    bool bf16;                       // the chip has bfloat16
    bool getTilingData;              // GET_TILING_DATA exists (not on 910, ascend.md 2.6)
    bool coupled;                    // cube and vector share one core (1001/2002)
    bool strictTruncation;           // report a truncating DataCopy/Compare instead of doing it
    bool checkRaces;                 // check pipe synchronisation (SetFlag/WaitFlag, queues)
    int cubeCores;                   // AI Cores (split chips: AICs), the most blocks SyncAll allows
};

inline ChipConfig DefaultChipConfig()
{
    ChipConfig c{};
    c.name = "Ascend910B1";
    c.arch = ASCENDC_EMU_ARCH;
    c.capacity[static_cast<int>(Space::UB)] = ASCENDC_EMU_UB_SIZE;
    c.capacity[static_cast<int>(Space::L1)] = ASCENDC_EMU_L1_SIZE;
    c.capacity[static_cast<int>(Space::L0A)] = ASCENDC_EMU_L0A_SIZE;
    c.capacity[static_cast<int>(Space::L0B)] = ASCENDC_EMU_L0B_SIZE;
    c.capacity[static_cast<int>(Space::L0C)] = ASCENDC_EMU_L0C_SIZE;
    c.capacity[static_cast<int>(Space::BT)] = 1024;
    c.capacity[static_cast<int>(Space::FB)] = 2048;
    const uint32_t align[kSpaces] = {1, 32, 32, 512, 512, 64, 64, 64};
    for (int i = 0; i < kSpaces; ++i) {
        c.alignment[i] = align[i];
    }
    c.queueBuffersPerPosition = ASCENDC_EMU_ARCH == 1001 ? 4 : 8;
    c.maxBuffersPerPipe = 64;
    c.dataCopyPad = ASCENDC_EMU_ARCH != 1001 && ASCENDC_EMU_ARCH != 2002;
    c.bf16 = ASCENDC_EMU_ARCH != 1001 && ASCENDC_EMU_ARCH != 2002;
    c.getTilingData = ASCENDC_EMU_ARCH != 1001;
    c.coupled = ASCENDC_EMU_ARCH == 1001 || ASCENDC_EMU_ARCH == 2002;
    c.strictTruncation = false;
    c.checkRaces = true;
    c.cubeCores = 24;
    return c;
}

inline ChipConfig& Chip()
{
    static ChipConfig config = DefaultChipConfig();
    return config;
}

inline void SetChipConfig(const ChipConfig& config)
{
    Chip() = config;
}

enum class Pipe : int { S = 0, V, M, MTE1, MTE2, MTE3, FIX, COUNT };
constexpr int kPipes = static_cast<int>(Pipe::COUNT);

inline const char* PipeName(Pipe p)
{
    static const char* const names[] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
    return names[static_cast<int>(p)];
}

enum class SlotState : uint8_t { FREE, ALLOCATED, ENQUEUED, DEQUEUED, SCRATCH };

// one InitBuffer'd buffer: a queue slot or a TBuf
struct Allocation {
    Space space;
    TPosition position;
    uint32_t base;
    uint32_t bytes;
    const void* owner;
    int slot;
    SlotState state;
    uint64_t lastWrite[kPipes];
    uint64_t lastRead[kPipes];
    // what the queue's hand-over tells the slot's next user (its hidden events)
    uint64_t handoff[kPipes];
};

struct EventSnapshot {
    bool pending;
    uint64_t known[kPipes];
};

// the cores of one block of a mix kernel on a split chip: AIVs 0..n-1, then the AIC
constexpr int kMaxAiv = 2;
constexpr int kGroupCores = kMaxAiv + 1;
constexpr int kCrossCoreFlags = 11;  // flag ids 0..10 (asc-devkit CrossCoreSetFlag.md)

// AICORE: the one core of a coupled chip, or of a vector-only/cube-only launch
enum class CoreKind : int { AICORE = 0, AIC, AIV };

struct CoreGroup;

// what the running core adds its copies to GM as (SetAtomicAdd<T>; NONE: they overwrite)
enum class AtomicKind : int { NONE = 0, F32, F16, BF16, S32, S16, S8 };

// an Mmad whose L0C tile the next Mmad may not read in order: Mmad.md (同步优化说明) asks
// for PipeBarrier<PIPE_M> between Mmads that accumulate into one tile when
// (m / 16) * (n / 16) < 10; above that the cube orders them itself
struct UnorderedMmad {
    uint32_t begin;  // L0C bytes [begin, end) it wrote
    uint32_t end;
    const char* file;  // where the kernel called it
    int line;
    int tiles;  // (m / 16) * (n / 16)
};

struct BlockState {
    int64_t idx = 0;
    int64_t num = 1;
    bool running = false;
    std::vector<uint8_t> memory[kSpaces];
    std::vector<Allocation> allocations;
    const void* pipe = nullptr;
    int kernelType = -1;
    uint64_t clock[kPipes] = {};
    uint64_t known[kPipes][kPipes] = {};
    std::map<std::pair<int, int>, EventSnapshot> events;
    int nextEvent = 0;
    // in a mix group: which core this is, and what it knows of the other cores' pipes
    // (from the cross-core flags it consumed)
    CoreKind core = CoreKind::AICORE;
    int coreIndex = 0;
    int subBlockIdx = 0;
    CoreGroup* group = nullptr;
    uint64_t crossKnown[kGroupCores][kPipes] = {};
    AtomicKind atomic = AtomicKind::NONE;  // SetAtomicAdd<T> in force
    std::vector<UnorderedMmad> unorderedMmads;  // since the last PipeBarrier<PIPE_M / PIPE_ALL>
};

// the running core's state: one core runs at a time (mix groups hand over explicitly)
inline BlockState*& CurrentState()
{
    static BlockState single;
    static BlockState* current = &single;
    return current;
}

inline BlockState& State()
{
    return *CurrentState();
}

struct GmRegion {
    const uint8_t* begin;
    size_t bytes;
    bool shared;  // the workspace: the cores of a mix group exchange data through it
};

inline std::vector<GmRegion>& GmRegions()
{
    static std::vector<GmRegion> regions;
    return regions;
}

using FailureHandler = void (*)(const char* message);

inline FailureHandler& OnFailure()
{
    static FailureHandler handler = nullptr;
    return handler;
}

// report a violation and stop: one line on stderr, then abort (or the installed handler)
[[noreturn]] inline void Fail(const char* format, ...) __attribute__((format(printf, 1, 2)));

[[noreturn]] inline void Fail(const char* format, ...)
{
    char body[1536];
    va_list args;
    va_start(args, format);
    std::vsnprintf(body, sizeof(body), format, args);
    va_end(args);
    char message[1700];
    if (State().running && State().core != CoreKind::AICORE) {
        char core[8];
        if (State().core == CoreKind::AIC) {
            std::snprintf(core, sizeof(core), "aic");
        } else {
            std::snprintf(core, sizeof(core), "aiv%d", State().subBlockIdx);
        }
        std::snprintf(message, sizeof(message), "block %lld of %lld (%s): %s", static_cast<long long>(State().idx),
                      static_cast<long long>(State().num), core, body);
    } else if (State().running) {
        std::snprintf(message, sizeof(message), "block %lld of %lld: %s", static_cast<long long>(State().idx),
                      static_cast<long long>(State().num), body);
    } else {
        std::snprintf(message, sizeof(message), "%s", body);
    }
    if (OnFailure() != nullptr) {
        OnFailure()(message);
    }
    std::fprintf(stderr, "ascendc-emu: error: %s\n", message);
    std::fflush(stderr);
    std::abort();
}

inline const char* PositionName(TPosition p)
{
    switch (p) {
        case TPosition::GM: return "GM";
        case TPosition::A1: return "A1";
        case TPosition::A2: return "A2";
        case TPosition::B1: return "B1";
        case TPosition::B2: return "B2";
        case TPosition::C1: return "C1";
        case TPosition::C2: return "C2";
        case TPosition::CO1: return "CO1";
        case TPosition::CO2: return "CO2";
        case TPosition::VECIN: return "VECIN";
        case TPosition::VECOUT: return "VECOUT";
        case TPosition::VECCALC: return "VECCALC";
        case TPosition::SPM: return "SPM";
        case TPosition::TSCM: return "TSCM";
        default: return "?";
    }
}

// the physical buffer of a logical position (ascend.md 1.7)
inline Space SpaceOf(TPosition p)
{
    const bool coupled = Chip().coupled;
    switch (p) {
        case TPosition::VECIN:
        case TPosition::VECOUT:
        case TPosition::VECCALC: return Space::UB;
        case TPosition::A1:
        case TPosition::B1:
        case TPosition::TSCM: return Space::L1;
        case TPosition::C1: return coupled ? Space::UB : Space::L1;
        case TPosition::A2: return Space::L0A;
        case TPosition::B2: return Space::L0B;
        case TPosition::CO1: return Space::L0C;
        case TPosition::C2: return coupled ? Space::L0C : Space::BT;
        case TPosition::CO2:
            if (coupled) {
                return Space::UB;
            }
            break;
        default: break;
    }
    Fail("position %s has no on-chip buffer on %s", PositionName(p), Chip().name);
}

inline bool CoreHasSpace(CoreKind core, Space space)
{
    if (core == CoreKind::AIV) {
        return space == Space::UB || space == Space::GM;
    }
    if (core == CoreKind::AIC) {
        return space != Space::UB;
    }
    return true;
}

// the buffer of a position on the running core: the AIV of a split chip has only UB,
// the AIC no UB (ascend.md 1.1)
inline Space SpaceOnCore(TPosition p)
{
    const Space space = SpaceOf(p);
    if (!CoreHasSpace(State().core, space)) {
        Fail("position %s (%s) does not exist on the %s of %s: %s", PositionName(p), SpaceName(space),
             State().core == CoreKind::AIV ? "AIV" : "AIC", Chip().name,
             State().core == CoreKind::AIV ? "an AIV has only UB" : "an AIC has no UB");
    }
    return space;
}

// Start a block: fresh, poisoned on-chip memories (0xFF bytes read as NaN in half,
// bfloat16 and float), no allocations, no events
inline void BeginBlock(int64_t idx, int64_t num)
{
    BlockState& s = State();
    s.idx = idx;
    s.num = num;
    s.running = true;
    for (int i = 0; i < kSpaces; ++i) {
        const bool has = CoreHasSpace(s.core, static_cast<Space>(i));
        s.memory[i].assign(has ? static_cast<size_t>(Chip().capacity[i]) : 0, 0xFF);
    }
    s.allocations.clear();
    s.pipe = nullptr;
    s.kernelType = -1;
    std::memset(s.clock, 0, sizeof(s.clock));
    std::memset(s.known, 0, sizeof(s.known));
    s.events.clear();
    s.nextEvent = 0;
    s.atomic = AtomicKind::NONE;
}

inline const char* HardEventName(HardEvent e);

inline void EndBlock()
{
    BlockState& s = State();
    for (const auto& entry : s.events) {
        if (entry.second.pending) {
            Fail("SetFlag<HardEvent::%s>(%d) was never waited for: pair every SetFlag with a WaitFlag",
                 HardEventName(static_cast<HardEvent>(entry.first.first)), entry.first.second);
        }
    }
    if (s.pipe != nullptr) {
        Fail("the kernel returned while its TPipe is alive");
    }
    s.running = false;
}

// ---- mix groups: the AIC and AIVs of one block, run as coroutines -------------------

// what a cross-core flag carries: the setter's knowledge of every core's pipes
struct CrossSnapshot {
    uint64_t known[kGroupCores][kPipes];
};

struct Scheduler;

// The AIC and AIVs of one block: their states, the cross-core flags between them and the
// race marks of the workspace. Which core runs is the Scheduler's business.
struct CoreGroup {
    int nAiv = 0;
    Scheduler* sched = nullptr;
    int base = 0;  // the scheduler's index of this group's first core
    BlockState states[kGroupCores];
    bool done[kGroupCores] = {};
    int waiting[kGroupCores] = {-1, -1, -1};
    // sets not consumed yet: from the AIC to AIV i, and from AIV i to the AIC
    std::deque<CrossSnapshot> toAiv[kMaxAiv][kCrossCoreFlags];
    std::deque<CrossSnapshot> toAic[kMaxAiv][kCrossCoreFlags];
    // GM shadow of the shared regions, per 32-byte granule: which bytes of it each core
    // last wrote and read, on which pipe and when. Byte masks, since DataCopyPad's
    // UB -> GM copy writes exactly blockLen bytes (ascend.md 2.7, DataCopyPad): two AIVs
    // may write the two halves of one granule (16-byte rows) without ordering
    struct Mark {
        int8_t core = -1;
        uint8_t pipe = 0;
        uint32_t bytes = 0;  // bit b: byte b of the granule
        uint64_t clock = 0;
    };
    std::vector<std::vector<Mark>> writes;
    std::vector<std::vector<Mark>> reads;

    int Cores() const
    {
        return nAiv + 1;
    }

    bool Ready(int i) const
    {
        const int flag = waiting[i];
        if (flag < 0) {
            return true;
        }
        if (i < nAiv) {
            return !toAiv[i][flag].empty();
        }
        for (int a = 0; a < nAiv; ++a) {
            if (toAic[a][flag].empty()) {
                return false;
            }
        }
        return true;
    }
};

// Each core is a thread; only the one whose turn it is runs. A core hands the turn over
// when it waits (for a flag that has not been set, or at a SyncAll not every core of the
// launch has reached) to the next core in order that can run (AIV 0, AIV 1, AIC, then
// the next block's), or when it returns. A wait no core can satisfy is a deadlock. One
// scheduler runs one block's group; a kernel that calls SyncAll runs every block's
// group in one (its cores must all be resident: blockDim <= the cube cores).
struct Scheduler {
    std::mutex mutex;
    std::condition_variable cv;
    int turn = 0;
    std::vector<CoreGroup*> groups;
    int perGroup = 0;
    bool together = false;      // every block of the launch: SyncAll is allowed
    std::vector<int> arrived;   // SyncAll calls per core
    std::vector<int> barrier;   // the SyncAll count a core waits for (-1: none)
    // each core's pipe clocks at its n-th SyncAll (index n - 1)
    std::vector<std::vector<std::array<uint64_t, kPipes>>> arrivalClock;

    int Cores() const
    {
        return static_cast<int>(groups.size()) * perGroup;
    }

    bool Done(int g) const
    {
        return groups[g / perGroup]->done[g % perGroup];
    }

    bool Ready(int g) const
    {
        if (!groups[g / perGroup]->Ready(g % perGroup)) {
            return false;
        }
        if (barrier[g] < 0) {
            return true;
        }
        for (int j = 0; j < Cores(); ++j) {
            if (arrived[j] < barrier[g]) {
                return false;
            }
        }
        return true;
    }

    // with the mutex held: run the next core that can
    void PassTurn(int g)
    {
        for (int step = 1; step <= Cores(); ++step) {
            const int j = (g + step) % Cores();
            if (!Done(j) && Ready(j)) {
                turn = j;
                cv.notify_all();
                return;
            }
        }
        for (int j = 0; j < Cores(); ++j) {
            if (!Done(j)) {
                CoreGroup& group = *groups[j / perGroup];
                CurrentState() = &group.states[j % perGroup];
                if (barrier[j] >= 0) {
                    Fail("SyncAll: a core of the launch returned without reaching it, so the others would "
                         "wait forever");
                }
                Fail("CrossCoreWaitFlag(%d) without a matching CrossCoreSetFlag: the core would wait forever",
                     group.waiting[j % perGroup]);
            }
        }
        turn = -1;
        cv.notify_all();
    }

    // with the mutex held: block core g until it is ready
    void Wait(std::unique_lock<std::mutex>& lock, int g)
    {
        BlockState* s = &State();
        while (!Ready(g)) {
            PassTurn(g);
            cv.wait(lock, [&]() { return turn == g; });
            CurrentState() = s;
        }
    }
};

inline const char* CoreName(const BlockState& s)
{
    return s.core == CoreKind::AIC ? "AIC" : (s.core == CoreKind::AIV ? "AIV" : "AI Core");
}

inline void PrepareGroup(CoreGroup& group, int nAiv, Scheduler& sched, int base)
{
    group.nAiv = nAiv;
    group.sched = &sched;
    group.base = base;
    for (int i = 0; i <= nAiv; ++i) {
        BlockState& s = group.states[i];
        s.core = i < nAiv ? CoreKind::AIV : CoreKind::AIC;
        s.coreIndex = i;
        s.subBlockIdx = i < nAiv ? i : 0;
        s.group = &group;
    }
    for (const auto& r : GmRegions()) {
        if (r.shared) {
            const size_t granules = (r.bytes + 31) / 32;
            group.writes.assign(granules, {});
            group.reads.assign(granules, {});
        }
    }
}

inline void CheckFlagsConsumed(CoreGroup& group)
{
    const int nAiv = group.nAiv;
    CurrentState() = &group.states[nAiv];
    for (int a = 0; a < nAiv; ++a) {
        for (int f = 0; f < kCrossCoreFlags; ++f) {
            if (!group.toAiv[a][f].empty()) {
                group.states[nAiv].running = true;
                Fail("CrossCoreSetFlag(%d) from the AIC was never waited for by AIV %d", f, a);
            }
            if (!group.toAic[a][f].empty()) {
                group.states[nAiv].running = true;
                Fail("CrossCoreSetFlag(%d) from AIV %d was never waited for by the AIC", f, a);
            }
        }
    }
}

// run blocks first .. first + count - 1 of a mix launch, their cores interleaved
template <typename F>
inline void RunGroups(int64_t first, int64_t count, int64_t blocks, int nAiv, bool together, F& body)
{
    Scheduler sched;
    sched.perGroup = nAiv + 1;
    sched.together = together;
    std::vector<std::unique_ptr<CoreGroup>> groups;
    for (int64_t k = 0; k < count; ++k) {
        groups.emplace_back(new CoreGroup());
        PrepareGroup(*groups.back(), nAiv, sched, static_cast<int>(k) * sched.perGroup);
        sched.groups.push_back(groups.back().get());
    }
    sched.arrived.assign(static_cast<size_t>(sched.Cores()), 0);
    sched.barrier.assign(static_cast<size_t>(sched.Cores()), -1);
    sched.arrivalClock.assign(static_cast<size_t>(sched.Cores()), {});
    BlockState* const outer = CurrentState();
    std::vector<std::thread> threads;
    for (int g = 0; g < sched.Cores(); ++g) {
        const int64_t b = first + g / sched.perGroup;
        threads.emplace_back([&sched, &body, g, b, blocks]() {
            CoreGroup& group = *sched.groups[g / sched.perGroup];
            {
                std::unique_lock<std::mutex> lock(sched.mutex);
                sched.cv.wait(lock, [&]() { return sched.turn == g; });
                CurrentState() = &group.states[g % sched.perGroup];
            }
            BeginBlock(b, blocks);
            body();
            EndBlock();
            std::unique_lock<std::mutex> lock(sched.mutex);
            group.done[g % sched.perGroup] = true;
            sched.PassTurn(g);
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    for (auto& group : groups) {
        CheckFlagsConsumed(*group);
    }
    CurrentState() = outer;
}

// run the blocks one after another; `mixAivs` > 0: a mix kernel on a split chip, each
// block one AIC and that many AIVs; `together`: all blocks' cores side by side (a kernel
// that calls SyncAll)
template <typename F>
inline void RunBlocks(int64_t blocks, F&& body, int mixAivs = 0, bool together = false)
{
    if (blocks < 1 || blocks > 65535) {
        Fail("kernel launched on %lld blocks: numBlocks must be in [1, 65535] (ascend.md 2.3)",
             static_cast<long long>(blocks));
    }
    if (mixAivs > kMaxAiv) {
        Fail("a mix launch with %d AIVs per block: the emulation has at most %d", mixAivs, kMaxAiv);
    }
    if (together) {
        if (mixAivs < 1) {
            Fail("SyncAll: the emulation runs all blocks side by side only for mix kernels on split chips");
        }
        if (blocks > Chip().cubeCores) {
            Fail("a kernel that calls SyncAll launched on %lld blocks, more than the %d cube cores of %s: the "
                 "blocks that wait for a free core would never start (asc-devkit SyncAll.md)",
                 static_cast<long long>(blocks), Chip().cubeCores, Chip().name);
        }
        RunGroups(0, blocks, blocks, mixAivs, true, body);
        return;
    }
    for (int64_t b = 0; b < blocks; ++b) {
        if (mixAivs > 0) {
            RunGroups(b, 1, blocks, mixAivs, false, body);
            continue;
        }
        BeginBlock(b, blocks);
        body();
        EndBlock();
    }
}

inline void RegisterGm(const void* begin, size_t bytes, bool shared = false)
{
    GmRegions().push_back(GmRegion{static_cast<const uint8_t*>(begin), bytes, shared});
}

inline void UnregisterGm(const void* begin)
{
    auto& regions = GmRegions();
    for (size_t i = 0; i < regions.size(); ++i) {
        if (regions[i].begin == begin) {
            regions.erase(regions.begin() + static_cast<std::ptrdiff_t>(i));
            return;
        }
    }
}

// a GM access must lie inside one GM buffer of the launch (unchecked when none is registered)
inline void CheckGm(const char* api, const void* p, uint64_t bytes)
{
    const auto& regions = GmRegions();
    if (regions.empty() || bytes == 0) {
        return;
    }
    const uint8_t* begin = static_cast<const uint8_t*>(p);
    for (const auto& r : regions) {
        if (begin >= r.begin && begin + bytes <= r.begin + r.bytes) {
            return;
        }
    }
    Fail("%s: GM access of %llu bytes at %p is outside every GM buffer of the launch", api,
         static_cast<unsigned long long>(bytes), p);
}

// the bytes of 32-byte granule i that the access [offset, offset + bytes) covers, as a mask
inline uint32_t GranuleBytes(size_t offset, uint64_t bytes, size_t i)
{
    const size_t lo = std::max(offset, i * 32);
    const size_t hi = std::min(static_cast<size_t>(offset + bytes), i * 32 + 32);
    const size_t n = hi - lo;
    const uint32_t run = n >= 32 ? 0xFFFFFFFFu : ((1u << n) - 1u);
    return run << (lo - i * 32);
}

// a write of `bytes` replaces the earlier writes of those bytes (it was ordered after them)
inline void OverwriteMarks(std::vector<CoreGroup::Mark>& marks, uint32_t bytes)
{
    for (auto& m : marks) {
        m.bytes &= ~bytes;
    }
    marks.erase(std::remove_if(marks.begin(), marks.end(), [](const CoreGroup::Mark& m) { return m.bytes == 0; }),
                marks.end());
}

// one mark per core and pipe: a later access on the same pipe joins its bytes at its
// clock (stricter for the bytes accessed earlier, never looser)
inline void AddMark(std::vector<CoreGroup::Mark>& marks, const CoreGroup::Mark& mark)
{
    for (auto& m : marks) {
        if (m.core == mark.core && m.pipe == mark.pipe) {
            m.bytes |= mark.bytes;
            m.clock = mark.clock;
            return;
        }
    }
    marks.push_back(mark);
}

// A GM access of the running core of a mix group to a shared region (the workspace):
// data another core of the group wrote (or, for a write, read) must be ordered before
// it by a cross-core flag set after that access's pipe finished it
inline void GmAccess(const char* api, const void* p, uint64_t bytes, int pipe, bool write)
{
    BlockState& s = State();
    CoreGroup* g = s.group;
    if (g == nullptr || bytes == 0 || !Chip().checkRaces) {
        return;
    }
    const uint8_t* begin = static_cast<const uint8_t*>(p);
    for (const auto& r : GmRegions()) {
        if (!r.shared || begin < r.begin || begin + bytes > r.begin + r.bytes) {
            continue;
        }
        const size_t first = static_cast<size_t>(begin - r.begin) / 32;
        const size_t last = static_cast<size_t>(begin + bytes - 1 - r.begin) / 32;
        const int me = s.coreIndex;
        const uint64_t now = s.clock[pipe];
        auto check = [&](const CoreGroup::Mark& m, const char* what) {
            if (m.core >= 0 && m.core != me && m.clock > s.crossKnown[m.core][m.pipe]) {
                const BlockState& other = g->states[m.core];
                char who[16];
                if (other.core == CoreKind::AIC) {
                    std::snprintf(who, sizeof(who), "the AIC");
                } else {
                    std::snprintf(who, sizeof(who), "AIV %d", other.subBlockIdx);
                }
                Fail("%s: the %s %s workspace bytes %s %s on PIPE_%s without a cross-core flag: "
                     "CrossCoreSetFlag<2, PIPE_%s> there and CrossCoreWaitFlag here",
                     api, CoreName(s), write ? "writes" : "reads", who, what, PipeName(static_cast<Pipe>(m.pipe)),
                     PipeName(static_cast<Pipe>(m.pipe)));
            }
        };
        const size_t offset = static_cast<size_t>(begin - r.begin);
        for (size_t i = first; i <= last; ++i) {
            const uint32_t mine = GranuleBytes(offset, bytes, i);
            for (const auto& m : g->writes[i]) {
                if ((m.bytes & mine) != 0) {
                    check(m, "wrote");
                }
            }
            if (write) {
                for (const auto& m : g->reads[i]) {
                    if ((m.bytes & mine) != 0) {
                        check(m, "read");
                    }
                }
                OverwriteMarks(g->writes[i], mine);
            }
            const CoreGroup::Mark mark{static_cast<int8_t>(me), static_cast<uint8_t>(pipe), mine, now};
            AddMark(write ? g->writes[i] : g->reads[i], mark);
        }
        return;
    }
}

// ---- pipes: vector clocks over the 7 pipes, checked at every buffer access ----------

// the workspace bytes TilingFunc asked for, at this launch
inline size_t& LaunchWorkspaceBytes()
{
    static size_t bytes = 0;
    return bytes;
}

inline void SetKernelType(int type)
{
    State().kernelType = type;
    // a pure vector (or cube) kernel forced to a MIX type needs a workspace of more than
    // 0 bytes (asc-devkit 设置Kernel类型.md, 约束说明)
    if (type == KERNEL_TYPE_MIX_VECTOR_CORE && LaunchWorkspaceBytes() == 0) {
        Fail("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_VECTOR_CORE): the kernel runs as a MIX type, so "
             "TilingFunc must ask for a workspace of more than 0 bytes (设置Kernel类型.md)");
    }
    const bool mix = type == KERNEL_TYPE_MIX_AIC_1_2 || type == KERNEL_TYPE_MIX_AIC_1_1;
    if (!Chip().coupled && mix != (State().group != nullptr)) {
        Fail("KERNEL_TASK_TYPE_DEFAULT: the kernel is %s but was launched %s", mix ? "mixed" : "not mixed",
             State().group != nullptr ? "on an AIC and its AIVs" : "on single cores");
    }
    if (type == KERNEL_TYPE_MIX_AIC_1_1 && State().group != nullptr && State().group->nAiv != 1) {
        Fail("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1) launched with %d AIVs per AIC",
             State().group->nAiv);
    }
    if (type == KERNEL_TYPE_MIX_AIC_1_2 && State().group != nullptr && State().group->nAiv != 2) {
        Fail("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2) launched with %d AIVs per AIC",
             State().group->nAiv);
    }
}

inline bool IsCubeOnly(int type)
{
    return type == KERNEL_TYPE_AIC_ONLY || type == KERNEL_TYPE_MIX_AIC_1_0;
}

inline bool IsVectorOnly(int type)
{
    return type == KERNEL_TYPE_AIV_ONLY || type == KERNEL_TYPE_MIX_AIV_1_0;
}

// on split chips (2201) a vector-only kernel runs on AIV cores, which have no cube unit
inline void RequireCube(const char* api)
{
    if (!Chip().coupled && IsVectorOnly(State().kernelType)) {
        Fail("%s: cube instruction in a vector-only (KERNEL_TYPE_AIV_ONLY) kernel: AIV cores of %s have no cube unit",
             api, Chip().name);
    }
    if (State().core == CoreKind::AIV) {
        Fail("%s: cube instruction on an AIV of a mix kernel: guard it with ASCEND_IS_AIC", api);
    }
}

inline void RequireVector(const char* api)
{
    if (!Chip().coupled && IsCubeOnly(State().kernelType)) {
        Fail("%s: vector instruction in a cube-only (KERNEL_TYPE_AIC_ONLY) kernel: AIC cores of %s have no vector unit",
             api, Chip().name);
    }
    if (State().core == CoreKind::AIC) {
        Fail("%s: vector instruction on the AIC of a mix kernel: guard it with ASCEND_IS_AIV", api);
    }
}

inline Allocation& AllocationOf(const char* api, int32_t id)
{
    BlockState& s = State();
    if (id < 0 || static_cast<size_t>(id) >= s.allocations.size()) {
        Fail("%s: the LocalTensor has no buffer (use AllocTensor, DeQue or TBuf::Get first)", api);
    }
    return s.allocations[static_cast<size_t>(id)];
}

// one access of `pipe` to a buffer: the slot must be usable, and data another pipe
// wrote (or, for a write, read) must be ordered before it by SetFlag/WaitFlag,
// PipeBarrier<PIPE_ALL> or the queue (EnQue/DeQue/AllocTensor/FreeTensor)
inline void Access(const char* api, int32_t id, Pipe pipe, bool write)
{
    Allocation& a = AllocationOf(api, id);
    if (a.state == SlotState::FREE) {
        Fail("%s: use of a %s tensor after FreeTensor (or before AllocTensor)", api, PositionName(a.position));
    }
    if (a.state == SlotState::ENQUEUED) {
        Fail("%s: use of a %s tensor between EnQue and DeQue", api, PositionName(a.position));
    }
    BlockState& s = State();
    const int q = static_cast<int>(pipe);
    s.clock[q] += 1;
    s.known[q][q] = s.clock[q];
    for (int p = 0; p < kPipes; ++p) {
        if (a.handoff[p] > s.known[q][p]) {
            s.known[q][p] = a.handoff[p];
        }
        a.handoff[p] = 0;
    }
    if (Chip().checkRaces) {
        for (int p = 0; p < kPipes; ++p) {
            if (p == q) {
                continue;
            }
            const bool raw = a.lastWrite[p] > s.known[q][p];
            const bool war = write && a.lastRead[p] > s.known[q][p];
            if (raw || war) {
                Fail("%s: PIPE_%s %s a %s buffer (%s address %u) that PIPE_%s %s without synchronisation: "
                     "insert SetFlag/WaitFlag<HardEvent::%s_%s>",
                     api, PipeName(pipe), write ? "writes" : "reads", PositionName(a.position), SpaceName(a.space),
                     a.base, PipeName(static_cast<Pipe>(p)), raw ? "wrote" : "reads", PipeName(static_cast<Pipe>(p)),
                     PipeName(pipe));
            }
        }
    }
    if (write) {
        a.lastWrite[q] = s.clock[q];
    } else {
        a.lastRead[q] = s.clock[q];
    }
}

// the queue framework synchronises a slot it hands out (its EnQue/DeQue and
// FreeTensor/AllocTensor are events): the next user knows the slot's past accesses
inline void Handover(int32_t id)
{
    BlockState& s = State();
    Allocation& a = s.allocations[static_cast<size_t>(id)];
    // what the pipes that used the slot knew (transitively) when they handed it over
    std::memset(a.handoff, 0, sizeof(a.handoff));
    for (int q = 0; q < kPipes; ++q) {
        if (a.lastWrite[q] == 0 && a.lastRead[q] == 0) {
            continue;
        }
        for (int p = 0; p < kPipes; ++p) {
            if (s.known[q][p] > a.handoff[p]) {
                a.handoff[p] = s.known[q][p];
            }
        }
    }
    std::memset(a.lastWrite, 0, sizeof(a.lastWrite));
    std::memset(a.lastRead, 0, sizeof(a.lastRead));
}

struct EventPipes {
    Pipe src;
    Pipe dst;
};

inline EventPipes PipesOf(HardEvent e)
{
    using P = Pipe;
    static const EventPipes table[] = {
        {P::MTE2, P::MTE1}, {P::MTE1, P::MTE2}, {P::MTE1, P::M},    {P::M, P::MTE1},    {P::MTE2, P::V},
        {P::V, P::MTE2},    {P::MTE3, P::V},    {P::V, P::MTE3},    {P::M, P::V},       {P::V, P::M},
        {P::V, P::V},       {P::MTE3, P::MTE1}, {P::MTE1, P::MTE3}, {P::MTE1, P::V},    {P::MTE2, P::M},
        {P::M, P::MTE2},    {P::V, P::MTE1},    {P::M, P::FIX},     {P::FIX, P::M},     {P::MTE3, P::MTE2},
        {P::MTE2, P::MTE3}, {P::S, P::V},       {P::V, P::S},       {P::S, P::MTE2},    {P::MTE2, P::S},
        {P::S, P::MTE3},    {P::MTE3, P::S},    {P::MTE2, P::FIX},  {P::FIX, P::MTE2},  {P::FIX, P::S},
        {P::M, P::S},       {P::FIX, P::MTE3},  {P::MTE1, P::FIX},  {P::FIX, P::MTE1},  {P::FIX, P::FIX},
    };
    return table[static_cast<int>(e)];
}

inline const char* HardEventName(HardEvent e)
{
    static char names[static_cast<int>(HardEvent::MAX)][32];
    const int i = static_cast<int>(e);
    if (i < 0 || i >= static_cast<int>(HardEvent::MAX)) {
        return "?";
    }
    const EventPipes p = PipesOf(e);
    std::snprintf(names[i], sizeof(names[i]), "%s_%s", PipeName(p.src), PipeName(p.dst));
    return names[i];
}

inline void SetEvent(HardEvent e, int id)
{
    if (id < 0 || id > 7) {
        Fail("SetFlag<HardEvent::%s>: event id %d is not in [0, 7]", HardEventName(e), id);
    }
    BlockState& s = State();
    EventSnapshot& ev = s.events[{static_cast<int>(e), id}];
    if (ev.pending) {
        Fail("SetFlag<HardEvent::%s>(%d) while the same flag is still set: WaitFlag it first", HardEventName(e), id);
    }
    const int src = static_cast<int>(PipesOf(e).src);
    ev.pending = true;
    std::memcpy(ev.known, s.known[src], sizeof(ev.known));
    ev.known[src] = s.clock[src];
}

inline void WaitEvent(HardEvent e, int id)
{
    BlockState& s = State();
    auto it = s.events.find({static_cast<int>(e), id});
    if (it == s.events.end() || !it->second.pending) {
        Fail("WaitFlag<HardEvent::%s>(%d) without a matching SetFlag: the core would wait forever", HardEventName(e),
             id);
    }
    const int dst = static_cast<int>(PipesOf(e).dst);
    for (int p = 0; p < kPipes; ++p) {
        if (it->second.known[p] > s.known[dst][p]) {
            s.known[dst][p] = it->second.known[p];
        }
    }
    it->second.pending = false;
}

inline void BarrierAll()
{
    BlockState& s = State();
    s.unorderedMmads.clear();
    for (int q = 0; q < kPipes; ++q) {
        for (int p = 0; p < kPipes; ++p) {
            s.known[q][p] = s.clock[p];
        }
    }
}

// ---- element arithmetic: per-op rounding to the element type ------------------------

template <typename T>
struct Arith {
    using type = T;
    static type Load(T v)
    {
        return v;
    }
    static T Store(type v)
    {
        return v;
    }
};
template <>
struct Arith<half> {
    using type = float;
    static float Load(half v)
    {
        return static_cast<float>(v);
    }
    static half Store(float v)
    {
        return half(v);
    }
};
template <>
struct Arith<bfloat16_t> {
    using type = float;
    static float Load(bfloat16_t v)
    {
        return static_cast<float>(v);
    }
    static bfloat16_t Store(float v)
    {
        return bfloat16_t(v);
    }
};
template <>
struct Arith<int16_t> {
    using type = int64_t;
    static int64_t Load(int16_t v)
    {
        return v;
    }
    static int16_t Store(int64_t v)
    {
        return static_cast<int16_t>(static_cast<uint16_t>(v));
    }
};
template <>
struct Arith<int32_t> {
    using type = int64_t;
    static int64_t Load(int32_t v)
    {
        return v;
    }
    static int32_t Store(int64_t v)
    {
        return static_cast<int32_t>(static_cast<uint32_t>(v));
    }
};

template <typename T, typename... Us>
struct IsOneOf : std::false_type {};
template <typename T, typename U, typename... Us>
struct IsOneOf<T, U, Us...> : std::integral_constant<bool, std::is_same<T, U>::value || IsOneOf<T, Us...>::value> {};

template <typename T>
struct IsFloat16 : std::integral_constant<bool, std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value> {};

template <typename T>
inline const char* TypeName()
{
    if (std::is_same<T, half>::value) return "half";
    if (std::is_same<T, bfloat16_t>::value) return "bfloat16_t";
    if (std::is_same<T, float>::value) return "float";
    if (std::is_same<T, int8_t>::value) return "int8_t";
    if (std::is_same<T, uint8_t>::value) return "uint8_t";
    if (std::is_same<T, int16_t>::value) return "int16_t";
    if (std::is_same<T, uint16_t>::value) return "uint16_t";
    if (std::is_same<T, int32_t>::value) return "int32_t";
    if (std::is_same<T, uint32_t>::value) return "uint32_t";
    if (std::is_same<T, int64_t>::value) return "int64_t";
    if (std::is_same<T, uint64_t>::value) return "uint64_t";
    return "?";
}

template <typename T>
inline void RequireTypeOnChip(const char* api)
{
    if (std::is_same<T, bfloat16_t>::value && !Chip().bf16) {
        Fail("%s: %s has no bfloat16", api, Chip().name);
    }
}

}  // namespace emu

// ------------------------------------------------------------------------------------
// Tensors (ascend.md 2.4)
// ------------------------------------------------------------------------------------

template <typename T>
class LocalTensor {
public:
    using PrimType = T;

    LocalTensor() = default;

    __aicore__ inline LocalTensor operator[](const uint32_t offset) const
    {
        if (offset > size_) {
            emu::Fail("LocalTensor::operator[]: offset %u is past the end of a %u-element tensor", offset, size_);
        }
        LocalTensor view = *this;
        view.addr_ = addr_ + offset * static_cast<uint32_t>(sizeof(T));
        view.size_ = size_ - offset;
        return view;
    }

    __aicore__ inline T GetValue(const uint32_t index) const
    {
        CheckIndex("LocalTensor::GetValue", index);
        emu::Access("LocalTensor::GetValue", alloc_, emu::Pipe::S, false);
        T value;
        std::memcpy(&value, Bytes() + static_cast<size_t>(index) * sizeof(T), sizeof(T));
        return value;
    }

    __aicore__ inline void SetValue(const uint32_t index, const T value) const
    {
        CheckIndex("LocalTensor::SetValue", index);
        emu::Access("LocalTensor::SetValue", alloc_, emu::Pipe::S, true);
        std::memcpy(Bytes() + static_cast<size_t>(index) * sizeof(T), &value, sizeof(T));
    }

    __aicore__ inline uint32_t GetSize() const
    {
        return size_;
    }

    __aicore__ inline uint64_t GetPhyAddr() const
    {
        return addr_;
    }

    __aicore__ inline TPosition GetPosition() const
    {
        return position_;
    }

    template <typename U>
    __aicore__ inline LocalTensor<U> ReinterpretCast() const
    {
        LocalTensor<U> view;
        view.alloc_ = alloc_;
        view.space_ = space_;
        view.position_ = position_;
        view.addr_ = addr_;
        view.size_ = static_cast<uint32_t>(static_cast<uint64_t>(size_) * sizeof(T) / sizeof(U));
        return view;
    }

    // ---- emulation internals ----
    uint8_t* Bytes() const
    {
        return emu::State().memory[static_cast<int>(space_)].data() + addr_;
    }
    T* Data() const
    {
        return reinterpret_cast<T*>(Bytes());
    }
    void CheckIndex(const char* api, uint32_t index) const
    {
        if (alloc_ < 0) {
            emu::Fail("%s: the LocalTensor has no buffer", api);
        }
        if (index >= size_) {
            emu::Fail("%s: index %u is out of a %u-element tensor", api, index, size_);
        }
    }

    int32_t alloc_ = -1;
    emu::Space space_ = emu::Space::UB;
    TPosition position_ = TPosition::VECCALC;
    uint32_t addr_ = 0;  // byte address in its buffer (UB, L1, L0A, ...)
    uint32_t size_ = 0;  // elements from addr_ to the end of the buffer
};

// L2 cache mode of a GlobalTensor (asc-devkit kernel_operator; docs
// atlasascendc_api_07_00033). A2/A3 document DISABLE and NORMAL; LAST and PERSISTENT
// are declared for other architectures.
enum class CacheMode : uint8_t {
    CACHE_MODE_DISABLE = 0,
    CACHE_MODE_NORMAL = 1,
    CACHE_MODE_LAST = 2,
    CACHE_MODE_PERSISTENT = 4,
};

enum CacheRwMode { READ = 1, WRITE = 2, RW = 3 };  // reserved: use the default (RW)

template <typename T>
class GlobalTensor {
public:
    using PrimType = T;

    GlobalTensor() = default;

    // as on the device, a new buffer drops an earlier L2 cache hint (the hint alters
    // the address SetGlobalBuffer sets)
    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize)
    {
        addr_ = buffer;
        size_ = bufferSize;
        cacheMode_ = CacheMode::CACHE_MODE_NORMAL;
    }

    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer)
    {
        addr_ = buffer;
        size_ = std::numeric_limits<uint64_t>::max();
        cacheMode_ = CacheMode::CACHE_MODE_NORMAL;
    }

    // Whether reads and writes through this tensor (and its views) use L2. Values are
    // unchanged: the emulator has no L2. It rejects the hint on chips without it (910,
    // 310P), before SetGlobalBuffer (the device derives the altered address from the
    // buffer's), and modes A2/A3 do not document.
    template <CacheRwMode rwMode = CacheRwMode::RW>
    __aicore__ inline void SetL2CacheHint(CacheMode mode)
    {
        static_assert(rwMode == CacheRwMode::READ || rwMode == CacheRwMode::WRITE || rwMode == CacheRwMode::RW,
                      "SetL2CacheHint: rwMode is READ, WRITE or RW");
        if (emu::Chip().arch == 1001 || emu::Chip().arch == 2002) {
            emu::Fail("GlobalTensor::SetL2CacheHint is not available on %s (Atlas A2/A3 only)", emu::Chip().name);
        }
        if (addr_ == nullptr) {
            emu::Fail("GlobalTensor::SetL2CacheHint before SetGlobalBuffer: the hint alters the buffer's address");
        }
        if (mode != CacheMode::CACHE_MODE_DISABLE && mode != CacheMode::CACHE_MODE_NORMAL) {
            emu::Fail("GlobalTensor::SetL2CacheHint: CacheMode %d is not CACHE_MODE_DISABLE or CACHE_MODE_NORMAL on %s",
                      static_cast<int>(mode), emu::Chip().name);
        }
        cacheMode_ = mode;
    }

    __aicore__ inline GlobalTensor operator[](const uint64_t offset) const
    {
        if (size_ != std::numeric_limits<uint64_t>::max() && offset > size_) {
            emu::Fail("GlobalTensor::operator[]: offset %llu is past the end of a %llu-element tensor",
                      static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size_));
        }
        GlobalTensor view = *this;
        view.addr_ = addr_ + offset;
        if (size_ != std::numeric_limits<uint64_t>::max()) {
            view.size_ = size_ - offset;
        }
        return view;
    }

    __aicore__ inline T GetValue(const uint64_t offset) const
    {
        Check("GlobalTensor::GetValue", offset);
        emu::GmAccess("GlobalTensor::GetValue", addr_ + offset, sizeof(T), static_cast<int>(emu::Pipe::S), false);
        T value;
        std::memcpy(&value, addr_ + offset, sizeof(T));
        return value;
    }

    __aicore__ inline void SetValue(const uint64_t offset, const T value) const
    {
        Check("GlobalTensor::SetValue", offset);
        emu::GmAccess("GlobalTensor::SetValue", addr_ + offset, sizeof(T), static_cast<int>(emu::Pipe::S), true);
        std::memcpy(addr_ + offset, &value, sizeof(T));
    }

    __aicore__ inline uint64_t GetSize() const
    {
        return size_;
    }

    __aicore__ inline const __gm__ T* GetPhyAddr() const
    {
        return addr_;
    }

    // ---- emulation internals ----
    void Check(const char* api, uint64_t count) const
    {
        if (addr_ == nullptr) {
            emu::Fail("%s: the GlobalTensor has no buffer (SetGlobalBuffer)", api);
        }
        if (size_ != std::numeric_limits<uint64_t>::max() && count > size_) {
            emu::Fail("%s: %llu elements exceed the %llu-element GlobalTensor", api,
                      static_cast<unsigned long long>(count), static_cast<unsigned long long>(size_));
        }
        emu::CheckGm(api, addr_, (count + 1) * sizeof(T));
    }

    T* addr_ = nullptr;
    uint64_t size_ = 0;
    CacheMode cacheMode_ = CacheMode::CACHE_MODE_NORMAL;  // kept by views (operator[])
};

// ------------------------------------------------------------------------------------
// TPipe, TQue, TBuf (ascend.md 2.4): a bump allocator per buffer, queue state machines
// ------------------------------------------------------------------------------------

class TPipe;

namespace emu {

class BufferBase {
public:
    explicit BufferBase(TPosition position) : position_(position) {}
    BufferBase(const BufferBase&) = delete;
    BufferBase& operator=(const BufferBase&) = delete;

    TPosition position_;
    uint32_t bytes_ = 0;
    std::vector<int32_t> slots_;
};

// a TQue: each slot cycles FREE -> ALLOCATED -> ENQUEUED -> DEQUEUED -> FREE
class QueueBase : public BufferBase {
public:
    QueueBase(TPosition position, int32_t depth) : BufferBase(position), depth_(depth) {}

    const char* Name() const
    {
        std::snprintf(name_, sizeof(name_), "TQue<%s, %d>", PositionName(position_), depth_);
        return name_;
    }

    void RequireInit(const char* api) const
    {
        if (slots_.empty()) {
            Fail("%s::%s on a queue that has no buffers (TPipe::InitBuffer it first)", Name(), api);
        }
    }

    template <typename T>
    LocalTensor<T> Alloc()
    {
        RequireInit("AllocTensor");
        if (free_.empty()) {
            Fail("%s::AllocTensor with no free buffer: all %zu are allocated or queued (FreeTensor one first)",
                 Name(), slots_.size());
        }
        const int32_t id = free_.front();
        free_.pop_front();
        Allocation& a = State().allocations[static_cast<size_t>(id)];
        a.state = SlotState::ALLOCATED;
        Handover(id);
        return View<T>(id);
    }

    template <typename T>
    bool Enque(const LocalTensor<T>& tensor)
    {
        RequireInit("EnQue");
        const int32_t id = SlotOf("EnQue", tensor.alloc_, tensor.addr_);
        Allocation& a = State().allocations[static_cast<size_t>(id)];
        if (a.state != SlotState::ALLOCATED) {
            Fail("%s::EnQue of a tensor that is not allocated (AllocTensor it first; it was %s)", Name(),
                 StateName(a.state));
        }
        if (depth_ < 1 || static_cast<int32_t>(fifo_.size()) >= depth_) {
            Fail("%s::EnQue: %zu tensors are already queued, the queue depth is %d (DeQue first)", Name(),
                 fifo_.size(), depth_);
        }
        a.state = SlotState::ENQUEUED;
        fifo_.push_back(id);
        return true;
    }

    template <typename T>
    LocalTensor<T> Deque()
    {
        RequireInit("DeQue");
        if (fifo_.empty()) {
            Fail("%s::DeQue with nothing enqueued", Name());
        }
        const int32_t id = fifo_.front();
        fifo_.pop_front();
        State().allocations[static_cast<size_t>(id)].state = SlotState::DEQUEUED;
        Handover(id);
        return View<T>(id);
    }

    template <typename T>
    void Free(const LocalTensor<T>& tensor)
    {
        RequireInit("FreeTensor");
        const int32_t id = SlotOf("FreeTensor", tensor.alloc_, tensor.addr_);
        Allocation& a = State().allocations[static_cast<size_t>(id)];
        if (a.state == SlotState::FREE || a.state == SlotState::ENQUEUED) {
            Fail("%s::FreeTensor of a tensor the queue does not hold (it is %s)", Name(), StateName(a.state));
        }
        a.state = SlotState::FREE;
        free_.push_back(id);
    }

    int32_t SlotOf(const char* api, int32_t id, uint32_t addr) const
    {
        for (int32_t slot : slots_) {
            if (slot == id) {
                if (State().allocations[static_cast<size_t>(slot)].base != addr) {
                    Fail("%s::%s of a view into a buffer: pass the tensor AllocTensor/DeQue returned", Name(), api);
                }
                return slot;
            }
        }
        Fail("%s::%s of a tensor this queue did not hand out", Name(), api);
    }

    static const char* StateName(SlotState s)
    {
        switch (s) {
            case SlotState::FREE: return "free";
            case SlotState::ALLOCATED: return "allocated";
            case SlotState::ENQUEUED: return "enqueued";
            case SlotState::DEQUEUED: return "dequeued";
            default: return "scratch";
        }
    }

    template <typename T>
    LocalTensor<T> View(int32_t id) const
    {
        const Allocation& a = State().allocations[static_cast<size_t>(id)];
        LocalTensor<T> t;
        t.alloc_ = id;
        t.space_ = a.space;
        t.position_ = a.position;
        t.addr_ = a.base;
        t.size_ = a.bytes / static_cast<uint32_t>(sizeof(T));
        return t;
    }

    int32_t depth_;
    std::deque<int32_t> free_;
    std::deque<int32_t> fifo_;
    mutable char name_[48] = {};
};

}  // namespace emu

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public emu::QueueBase {
public:
    TQue() : emu::QueueBase(pos, depth) {}

    template <typename T>
    __aicore__ inline LocalTensor<T> AllocTensor()
    {
        return Alloc<T>();
    }

    template <typename T>
    __aicore__ inline bool EnQue(const LocalTensor<T>& tensor)
    {
        return Enque(tensor);
    }

    template <typename T>
    __aicore__ inline LocalTensor<T> DeQue()
    {
        return Deque<T>();
    }

    template <typename T>
    __aicore__ inline void FreeTensor(LocalTensor<T>& tensor)
    {
        Free(tensor);
    }

    __aicore__ inline bool HasTensorInQue()
    {
        return !fifo_.empty();
    }

    __aicore__ inline int32_t GetTensorCountInQue()
    {
        return static_cast<int32_t>(fifo_.size());
    }

    __aicore__ inline bool HasIdleBuffer()
    {
        return !free_.empty();
    }

    __aicore__ inline bool VacantInQue()
    {
        return static_cast<int32_t>(fifo_.size()) < depth_;
    }
};

template <TPosition pos = TPosition::VECCALC>
class TBuf : public emu::BufferBase {
public:
    TBuf() : emu::BufferBase(pos) {}

    template <typename T>
    __aicore__ inline LocalTensor<T> Get()
    {
        return GetWithOffset<T>(bytes_ / static_cast<uint32_t>(sizeof(T)), 0);
    }

    template <typename T>
    __aicore__ inline LocalTensor<T> Get(uint32_t len)
    {
        return GetWithOffset<T>(len, 0);
    }

    template <typename T>
    __aicore__ inline LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset)
    {
        if (slots_.empty()) {
            emu::Fail("TBuf<%s>::Get on a buffer that has no memory (TPipe::InitBuffer it first)",
                      emu::PositionName(position_));
        }
        if (static_cast<uint64_t>(bufOffset) + static_cast<uint64_t>(size) * sizeof(T) > bytes_) {
            emu::Fail("TBuf<%s>::Get of %u elements at byte %u exceeds its %u bytes", emu::PositionName(position_),
                      size, bufOffset, bytes_);
        }
        const emu::Allocation& a = emu::State().allocations[static_cast<size_t>(slots_[0])];
        LocalTensor<T> t;
        t.alloc_ = slots_[0];
        t.space_ = a.space;
        t.position_ = a.position;
        t.addr_ = a.base + bufOffset;
        t.size_ = size;
        return t;
    }
};

class TPipe {
public:
    TPipe()
    {
        if (emu::State().pipe != nullptr) {
            emu::Fail("a second TPipe while one is alive: a kernel has one TPipe (ascend.md 2.4)");
        }
        emu::State().pipe = this;
        std::memset(used_, 0, sizeof(used_));
    }

    ~TPipe()
    {
        if (emu::State().pipe == this) {
            emu::State().pipe = nullptr;
        }
    }

    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    // `num` buffers of `len` bytes (rounded up to 32) for a queue (ascend.md 2.4)
    template <TPosition pos, int32_t depth, auto mask>
    __aicore__ inline bool InitBuffer(TQue<pos, depth, mask>& que, uint8_t num, uint32_t len)
    {
        char api[128];
        std::snprintf(api, sizeof(api), "TPipe::InitBuffer(%s)", que.Name());
        if (!que.slots_.empty()) {
            emu::Fail("%s: the queue already has buffers", api);
        }
        if (num < 1) {
            emu::Fail("%s: a queue needs at least one buffer", api);
        }
        positionBuffers_[static_cast<int>(pos)] += num;
        if (positionBuffers_[static_cast<int>(pos)] > emu::Chip().queueBuffersPerPosition) {
            emu::Fail("%s: %d queue buffers at %s, %s allows %d per position (ascend.md 2.4)", api,
                      positionBuffers_[static_cast<int>(pos)], emu::PositionName(pos), emu::Chip().name,
                      emu::Chip().queueBuffersPerPosition);
        }
        que.bytes_ = RoundUp32(len);
        for (uint8_t i = 0; i < num; ++i) {
            const int32_t id = Allocate(api, pos, que.bytes_, &que, i, emu::SlotState::FREE);
            que.slots_.push_back(id);
            que.free_.push_back(id);
        }
        return true;
    }

    // one buffer of `len` bytes (rounded up to 32) for a TBuf
    template <TPosition pos>
    __aicore__ inline bool InitBuffer(TBuf<pos>& buf, uint32_t len)
    {
        char api[128];
        std::snprintf(api, sizeof(api), "TPipe::InitBuffer(TBuf<%s>)", emu::PositionName(pos));
        if (!buf.slots_.empty()) {
            emu::Fail("%s: the buffer already has memory", api);
        }
        buf.bytes_ = RoundUp32(len);
        buf.slots_.push_back(Allocate(api, pos, buf.bytes_, &buf, 0, emu::SlotState::SCRATCH));
        return true;
    }

    __aicore__ inline TEventID FetchEventID(HardEvent evt)
    {
        (void)evt;
        const int id = emu::State().nextEvent;
        emu::State().nextEvent = (id + 1) % 6;  // ids 6 and 7 are the framework's (ascend.md 2.9)
        return static_cast<TEventID>(id);
    }

    __aicore__ inline void Reset()
    {
        std::memset(used_, 0, sizeof(used_));
        std::memset(positionBuffers_, 0, sizeof(positionBuffers_));
        buffers_ = 0;
    }

private:
    static uint32_t RoundUp32(uint32_t len)
    {
        return (len + 31u) / 32u * 32u;
    }

    int32_t Allocate(const char* api, TPosition pos, uint32_t bytes, const void* owner, int slot,
                     emu::SlotState state)
    {
        const emu::Space space = emu::SpaceOnCore(pos);
        const int s = static_cast<int>(space);
        buffers_ += 1;
        if (buffers_ > emu::Chip().maxBuffersPerPipe) {
            emu::Fail("%s: %d buffers, a TPipe allows %d (ascend.md 2.4)", api, buffers_,
                      emu::Chip().maxBuffersPerPipe);
        }
        const uint64_t end = used_[s] + bytes;
        if (end > emu::Chip().capacity[s]) {
            emu::Fail("%s: %s needs %llu bytes, %s has %llu", api, emu::SpaceName(space),
                      static_cast<unsigned long long>(end), emu::Chip().name,
                      static_cast<unsigned long long>(emu::Chip().capacity[s]));
        }
        emu::Allocation a{};
        a.space = space;
        a.position = pos;
        a.base = static_cast<uint32_t>(used_[s]);
        a.bytes = bytes;
        a.owner = owner;
        a.slot = slot;
        a.state = state;
        used_[s] = end;
        emu::State().allocations.push_back(a);
        return static_cast<int32_t>(emu::State().allocations.size() - 1);
    }

    uint64_t used_[emu::kSpaces];
    int positionBuffers_[static_cast<int>(TPosition::MAX) + 1] = {};
    int buffers_ = 0;
};

inline TPipe* GetTPipePtr()
{
    return static_cast<TPipe*>(const_cast<void*>(emu::State().pipe));
}

// ------------------------------------------------------------------------------------
// Blocks, kernel type, synchronisation (ascend.md 2.3, 2.9)
// ------------------------------------------------------------------------------------

// in a mix kernel an AIV's block index counts vector cores: block * AIVs + sub-block
// (ascend.md 2.3); GetTaskRation is the AIVs per block there, 1 elsewhere
__aicore__ inline int64_t GetBlockIdx()
{
    const emu::BlockState& s = emu::State();
    if (s.core == emu::CoreKind::AIV) {
        return s.idx * s.group->nAiv + s.subBlockIdx;
    }
    return s.idx;
}

__aicore__ inline int64_t GetBlockNum()
{
    return emu::State().num;
}

__aicore__ inline int64_t GetTaskRation()
{
    const emu::BlockState& s = emu::State();
    return s.core == emu::CoreKind::AIV ? s.group->nAiv : 1;
}

__aicore__ inline int64_t GetSubBlockIdx()
{
    return emu::State().subBlockIdx;
}

__aicore__ inline int64_t GetSubBlockNum()
{
    const emu::BlockState& s = emu::State();
    return s.core == emu::CoreKind::AIV ? s.group->nAiv : 1;
}

namespace emu {

inline void CheckCrossCore(const char* api, int mode, int flagId)
{
    if (State().group == nullptr) {
        Fail("%s outside a mix kernel on a split chip (it synchronises an AIC with its AIVs)", api);
    }
    if (mode != 2) {
        Fail("%s: mode %d is not emulated (mode 2 synchronises the AIC and the AIVs of a block)", api, mode);
    }
    if (flagId < 0 || flagId >= kCrossCoreFlags) {
        Fail("%s: flag id %d is not in [0, %d]", api, flagId, kCrossCoreFlags - 1);
    }
}

// what the setter knows once `pipe` has finished its work so far, of every core
inline CrossSnapshot Publish(int pipe)
{
    const BlockState& s = State();
    CrossSnapshot snap{};
    for (int c = 0; c < kGroupCores; ++c) {
        for (int p = 0; p < kPipes; ++p) {
            snap.known[c][p] = s.crossKnown[c][p];
        }
    }
    for (int p = 0; p < kPipes; ++p) {
        snap.known[s.coreIndex][p] = s.known[pipe][p];
    }
    snap.known[s.coreIndex][pipe] = s.clock[pipe];
    return snap;
}

inline void Learn(const CrossSnapshot& snap)
{
    BlockState& s = State();
    for (int c = 0; c < kGroupCores; ++c) {
        for (int p = 0; p < kPipes; ++p) {
            if (snap.known[c][p] > s.crossKnown[c][p]) {
                s.crossKnown[c][p] = snap.known[c][p];
            }
        }
    }
}

}  // namespace emu

// mode 2: a set on the AIC counts for each AIV of the block, the AIC's wait needs a set
// from every AIV; a flag counts at most 15 sets (asc-devkit CrossCoreSetFlag.md)
template <uint8_t modeId, pipe_t pipe>
__aicore__ inline void CrossCoreSetFlag(uint16_t flagId)
{
    const char* api = "CrossCoreSetFlag";
    emu::CheckCrossCore(api, modeId, flagId);
    if (pipe == PIPE_ALL) {
        emu::Fail("%s: PIPE_ALL is not a pipe to wait for", api);
    }
    emu::BlockState& s = emu::State();
    emu::CoreGroup& g = *s.group;
    const emu::CrossSnapshot snap = emu::Publish(static_cast<int>(pipe));
    std::unique_lock<std::mutex> lock(g.sched->mutex);
    auto push = [&](std::deque<emu::CrossSnapshot>& counter) {
        if (counter.size() >= 15) {
            emu::Fail("%s(%u): the flag's counter already holds 15 sets (nobody waits for them)", api, flagId);
        }
        counter.push_back(snap);
    };
    if (s.core == emu::CoreKind::AIC) {
        for (int a = 0; a < g.nAiv; ++a) {
            push(g.toAiv[a][flagId]);
        }
    } else {
        push(g.toAic[s.subBlockIdx][flagId]);
    }
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
__aicore__ inline void CrossCoreWaitFlag(uint16_t flagId)
{
    const char* api = "CrossCoreWaitFlag";
    emu::CheckCrossCore(api, 2, flagId);
    emu::BlockState* s = &emu::State();
    emu::CoreGroup& g = *s->group;
    const int me = s->coreIndex;
    std::unique_lock<std::mutex> lock(g.sched->mutex);
    g.waiting[me] = flagId;
    g.sched->Wait(lock, g.base + me);
    g.waiting[me] = -1;
    if (s->core == emu::CoreKind::AIV) {
        emu::Learn(g.toAiv[me][flagId].front());
        g.toAiv[me][flagId].pop_front();
    } else {
        for (int a = 0; a < g.nAiv; ++a) {
            emu::Learn(g.toAic[a][flagId].front());
            g.toAic[a][flagId].pop_front();
        }
    }
}

// SyncAll (asc-devkit SyncAll.md), the hard all-core sync of Atlas A2/A3. The c220
// implementation drains every pipe of the core first (pipe_barrier(PIPE_ALL)), then the
// core waits until every core of the launch has arrived; afterwards each core knows
// what the others did before it (the workspace race marks learn every core's pipe
// clocks at its arrival). <true> syncs the AIVs of a vector kernel; a mix kernel needs
// <false>. A launch of more blocks than cube cores would hang: the harness refuses it.
template <bool isAIVOnly = true>
__aicore__ inline void SyncAll()
{
    const char* api = "SyncAll";
    emu::BlockState* s = &emu::State();
    if (emu::Chip().arch != 2201) {
        emu::Fail("%s: the hard all-core sync is for Atlas A2/A3, not %s", api, emu::Chip().name);
    }
    if (s->group == nullptr || !s->group->sched->together) {
        emu::Fail("%s: the emulation runs all-core syncs only in mix kernels whose launch runs every block "
                  "side by side (the harness does so for kernels that call SyncAll)",
                  api);
    }
    if (isAIVOnly) {
        emu::Fail("%s<true> synchronizes the AIVs only: a mix kernel needs SyncAll<false>", api);
    }
    emu::BarrierAll();
    emu::CoreGroup& g = *s->group;
    emu::Scheduler& sc = *g.sched;
    std::unique_lock<std::mutex> lock(sc.mutex);
    const int me = g.base + s->coreIndex;
    std::array<uint64_t, emu::kPipes> clock{};
    for (int p = 0; p < emu::kPipes; ++p) {
        clock[p] = s->clock[p];
    }
    sc.arrivalClock[me].push_back(clock);
    const int n = ++sc.arrived[me];
    sc.barrier[me] = n;
    sc.Wait(lock, me);
    sc.barrier[me] = -1;
    for (int c = 0; c < g.Cores(); ++c) {
        const auto& theirs = sc.arrivalClock[g.base + c][n - 1];
        for (int p = 0; p < emu::kPipes; ++p) {
            if (theirs[p] > s->crossKnown[c][p]) {
                s->crossKnown[c][p] = theirs[p];
            }
        }
    }
}

// ---- atomic add (asc-devkit SetAtomicAdd.md) ------------------------------------------

namespace emu {

template <typename T>
constexpr AtomicKind AtomicKindOf()
{
    return std::is_same<T, float>::value        ? AtomicKind::F32
           : std::is_same<T, half>::value       ? AtomicKind::F16
           : std::is_same<T, bfloat16_t>::value ? AtomicKind::BF16
           : std::is_same<T, int32_t>::value    ? AtomicKind::S32
           : std::is_same<T, int16_t>::value    ? AtomicKind::S16
           : std::is_same<T, int8_t>::value     ? AtomicKind::S8
                                                : AtomicKind::NONE;
}

inline const char* AtomicName(AtomicKind k)
{
    static const char* const names[] = {"none", "float", "half", "bfloat16_t", "int32_t", "int16_t", "int8_t"};
    return names[static_cast<int>(k)];
}

// the types each chip adds: A2/A3 all six; the inference series AI Core float, half and
// int16_t; the training series float
inline bool AtomicTypeOnChip(AtomicKind k)
{
    if (Chip().arch == 1001) {
        return k == AtomicKind::F32;
    }
    if (Chip().arch == 2002) {
        return k == AtomicKind::F32 || k == AtomicKind::F16 || k == AtomicKind::S16;
    }
    return k != AtomicKind::NONE;
}

// the paths: A2/A3 from UB, L0C and L1; the others from UB only
inline bool AtomicPathOnChip(Space from)
{
    if (Chip().arch == 1001 || Chip().arch == 2002) {
        return from == Space::UB;
    }
    return from == Space::UB || from == Space::L0C || from == Space::L1;
}

// store `count` elements of T into GM at `dst` (unaligned-safe), adding them under
// SetAtomicAdd<T> (in T, rounding once per element), overwriting otherwise
template <typename T>
inline void StoreGm(const char* api, void* dst, const void* src, uint64_t count, Space from)
{
    const AtomicKind k = State().atomic;
    if (k == AtomicKind::NONE) {
        std::memmove(dst, src, count * sizeof(T));
        return;
    }
    if (k != AtomicKindOf<T>()) {
        Fail("%s: copies %s to GM while SetAtomicAdd<%s> is on: the hardware would add the bytes as %s "
             "(SetAtomicNone first, or SetAtomicAdd<%s>)",
             api, TypeName<T>(), AtomicName(k), AtomicName(k), TypeName<T>());
    }
    if (!AtomicPathOnChip(from)) {
        Fail("%s: %s has no atomic add from %s to GM", api, Chip().name, SpaceName(from));
    }
    auto* d = static_cast<uint8_t*>(dst);
    const auto* s = static_cast<const uint8_t*>(src);
    for (uint64_t i = 0; i < count; ++i) {
        T a;
        T b;
        std::memcpy(&a, d + i * sizeof(T), sizeof(T));
        std::memcpy(&b, s + i * sizeof(T), sizeof(T));
        T sum;
        if constexpr (std::is_integral<T>::value) {
            sum = static_cast<T>(static_cast<int64_t>(a) + static_cast<int64_t>(b));
        } else {
            sum = T(static_cast<float>(a) + static_cast<float>(b));
        }
        std::memcpy(d + i * sizeof(T), &sum, sizeof(T));
    }
}

}  // namespace emu

// copies to GM add to what GM holds from now on, as T (asc-devkit SetAtomicAdd.md)
template <typename T>
__aicore__ inline void SetAtomicAdd()
{
    static_assert(emu::AtomicKindOf<T>() != emu::AtomicKind::NONE,
                  "SetAtomicAdd adds int8_t, int16_t, half, bfloat16_t, int32_t or float");
    emu::RequireTypeOnChip<T>("SetAtomicAdd");
    if (!emu::AtomicTypeOnChip(emu::AtomicKindOf<T>())) {
        emu::Fail("SetAtomicAdd<%s>: %s has no atomic add of %s", emu::TypeName<T>(), emu::Chip().name,
                  emu::TypeName<T>());
    }
    emu::State().atomic = emu::AtomicKindOf<T>();
}

// copies to GM overwrite again
__aicore__ inline void SetAtomicNone()
{
    emu::State().atomic = emu::AtomicKind::NONE;
}

template <HardEvent event>
__aicore__ inline void SetFlag(int32_t eventID)
{
    emu::SetEvent(event, eventID);
}

template <HardEvent event>
__aicore__ inline void WaitFlag(int32_t eventID)
{
    emu::WaitEvent(event, eventID);
}

// PIPE_ALL orders every pipe after everything issued so far. One pipe is in order
// already, except the cube's Mmads on small tiles (UnorderedMmad): PIPE_M orders those
template <pipe_t pipe>
__aicore__ inline void PipeBarrier()
{
    if (pipe == PIPE_ALL) {
        emu::BarrierAll();
    } else if (pipe == PIPE_M) {
        emu::State().unorderedMmads.clear();
    }
}

// ------------------------------------------------------------------------------------
// Operand checks shared by the data-movement and vector APIs
// ------------------------------------------------------------------------------------

namespace emu {

template <typename T>
inline T* Operand(const char* api, const char* role, const LocalTensor<T>& t, uint64_t elements, Pipe pipe,
                  bool write)
{
    const Allocation& a = AllocationOf(api, t.alloc_);
    (void)a;
    const uint32_t align = Chip().alignment[static_cast<int>(t.space_)];
    if (align > 1 && t.addr_ % align != 0) {
        Fail("%s: %s address %u in %s is not %u-byte aligned (ascend.md 1.5)", api, role, t.addr_,
             SpaceName(t.space_), align);
    }
    if (elements > t.size_) {
        Fail("%s: %s has %u elements from its address, the call touches %llu", api, role, t.size_,
             static_cast<unsigned long long>(elements));
    }
    Access(api, t.alloc_, pipe, write);
    return t.Data();
}

template <typename T>
inline void RequireSpace(const char* api, const char* role, const LocalTensor<T>& t, Space space)
{
    if (t.alloc_ < 0) {
        Fail("%s: %s has no buffer", api, role);
    }
    if (t.space_ != space) {
        Fail("%s: %s is in %s (%s), this path needs %s", api, role, SpaceName(t.space_), PositionName(t.position_),
             SpaceName(space));
    }
}

// vector operands: UB, 32-byte aligned, at most a 100 % overlap with each other (ascend.md 2.8)
template <typename D, typename S>
inline void CheckOverlap(const char* api, const LocalTensor<D>& dst, uint64_t dstCount, const LocalTensor<S>& src,
                         uint64_t srcCount)
{
    if (dst.space_ != src.space_) {
        return;
    }
    const uint64_t d0 = dst.addr_, d1 = d0 + dstCount * sizeof(D);
    const uint64_t s0 = src.addr_, s1 = s0 + srcCount * sizeof(S);
    const bool intersect = d0 < s1 && s0 < d1;
    if (intersect && !(d0 == s0 && d1 == s1)) {
        Fail("%s: dst and src overlap partially (only the same address and length may be reused in place)", api);
    }
}

template <typename T>
inline T* VectorOperand(const char* api, const char* role, const LocalTensor<T>& t, uint64_t count, bool write)
{
    RequireSpace(api, role, t, Space::UB);
    return Operand(api, role, t, count, Pipe::V, write);
}

inline void CheckCount(const char* api, int64_t count)
{
    if (count < 0) {
        Fail("%s: negative count %lld", api, static_cast<long long>(count));
    }
}

template <typename T, typename F>
inline void Binary(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                   int64_t count, F f)
{
    RequireVector(api);
    RequireTypeOnChip<T>(api);
    CheckCount(api, count);
    if (count == 0) {
        return;
    }
    CheckOverlap(api, dst, count, src0, count);
    CheckOverlap(api, dst, count, src1, count);
    const T* a = VectorOperand(api, "src0", src0, count, false);
    const T* b = VectorOperand(api, "src1", src1, count, false);
    T* d = VectorOperand(api, "dst", dst, count, true);
    using A = Arith<T>;
    for (int64_t i = 0; i < count; ++i) {
        d[i] = A::Store(f(A::Load(a[i]), A::Load(b[i])));
    }
}

template <typename T, typename F>
inline void Unary(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, int64_t count, F f)
{
    RequireVector(api);
    RequireTypeOnChip<T>(api);
    CheckCount(api, count);
    if (count == 0) {
        return;
    }
    CheckOverlap(api, dst, count, src, count);
    const T* s = VectorOperand(api, "src", src, count, false);
    T* d = VectorOperand(api, "dst", dst, count, true);
    using A = Arith<T>;
    for (int64_t i = 0; i < count; ++i) {
        d[i] = A::Store(f(A::Load(s[i])));
    }
}

// NaN-propagating max/min (the vector unit's vmax/vmin on NaN is not documented)
template <typename C>
inline C Max(C a, C b)
{
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
}

template <typename C>
inline C Min(C a, C b)
{
    if (a != a) return a;
    if (b != b) return b;
    return a < b ? a : b;
}

}  // namespace emu

// ------------------------------------------------------------------------------------
// Vector compute, count form (ascend.md 2.8): per-op rounding to the element type
// ------------------------------------------------------------------------------------

#define AFC_EMU_ARITH_TYPES(T, api) \
    static_assert(emu::IsOneOf<T, int16_t, half, int32_t, float>::value, \
                  api " supports int16_t, half, int32_t and float (ascend.md 2.8)")
#define AFC_EMU_FLOAT_TYPES(T, api) \
    static_assert(emu::IsOneOf<T, half, float>::value, api " supports half and float (ascend.md 2.8)")

template <typename T>
__aicore__ inline void Add(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                           const int32_t& calCount)
{
    AFC_EMU_ARITH_TYPES(T, "Add");
    emu::Binary("Add", dst, src0, src1, calCount, [](auto a, auto b) { return a + b; });
}

template <typename T>
__aicore__ inline void Sub(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                           const int32_t& calCount)
{
    AFC_EMU_ARITH_TYPES(T, "Sub");
    emu::Binary("Sub", dst, src0, src1, calCount, [](auto a, auto b) { return a - b; });
}

template <typename T>
__aicore__ inline void Mul(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                           const int32_t& calCount)
{
    AFC_EMU_ARITH_TYPES(T, "Mul");
    emu::Binary("Mul", dst, src0, src1, calCount, [](auto a, auto b) { return a * b; });
}

template <typename T>
__aicore__ inline void Div(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                           const int32_t& calCount)
{
    AFC_EMU_FLOAT_TYPES(T, "Div");
    emu::Binary("Div", dst, src0, src1, calCount, [](auto a, auto b) { return a / b; });
}

template <typename T>
__aicore__ inline void Max(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                           const int32_t& calCount)
{
    AFC_EMU_ARITH_TYPES(T, "Max");
    emu::Binary("Max", dst, src0, src1, calCount, [](auto a, auto b) { return emu::Max(a, b); });
}

template <typename T>
__aicore__ inline void Min(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                           const int32_t& calCount)
{
    AFC_EMU_ARITH_TYPES(T, "Min");
    emu::Binary("Min", dst, src0, src1, calCount, [](auto a, auto b) { return emu::Min(a, b); });
}

template <typename T>
__aicore__ inline void Exp(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount)
{
    AFC_EMU_FLOAT_TYPES(T, "Exp");
    emu::Unary("Exp", dst, src, calCount, [](float x) { return std::exp(x); });
}

template <typename T>
__aicore__ inline void Ln(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount)
{
    AFC_EMU_FLOAT_TYPES(T, "Ln");
    emu::Unary("Ln", dst, src, calCount, [](float x) { return std::log(x); });
}

template <typename T>
__aicore__ inline void Sqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount)
{
    AFC_EMU_FLOAT_TYPES(T, "Sqrt");
    emu::Unary("Sqrt", dst, src, calCount, [](float x) { return std::sqrt(x); });
}

template <typename T>
__aicore__ inline void Rsqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount)
{
    AFC_EMU_FLOAT_TYPES(T, "Rsqrt");
    emu::Unary("Rsqrt", dst, src, calCount, [](float x) { return 1.0f / std::sqrt(x); });
}

template <typename T>
__aicore__ inline void Reciprocal(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount)
{
    AFC_EMU_FLOAT_TYPES(T, "Reciprocal");
    emu::Unary("Reciprocal", dst, src, calCount, [](float x) { return 1.0f / x; });
}

template <typename T>
__aicore__ inline void Abs(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount)
{
    AFC_EMU_FLOAT_TYPES(T, "Abs");
    emu::Unary("Abs", dst, src, calCount, [](float x) { return std::fabs(x); });
}

template <typename T>
__aicore__ inline void Relu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount)
{
    static_assert(emu::IsOneOf<T, half, int32_t, float>::value,
                  "Relu supports half, int32_t and float (ascend.md 2.8)");
    emu::Unary("Relu", dst, src, calCount, [](auto x) { return emu::Max(x, decltype(x)(0)); });
}

template <typename T>
__aicore__ inline void Adds(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                            const int32_t& calCount)
{
    AFC_EMU_ARITH_TYPES(T, "Adds");
    const auto s = emu::Arith<T>::Load(scalarValue);
    emu::Unary("Adds", dst, src, calCount, [s](auto x) { return x + s; });
}

template <typename T>
__aicore__ inline void Muls(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                            const int32_t& calCount)
{
    AFC_EMU_ARITH_TYPES(T, "Muls");
    const auto s = emu::Arith<T>::Load(scalarValue);
    emu::Unary("Muls", dst, src, calCount, [s](auto x) { return x * s; });
}

template <typename T>
__aicore__ inline void Maxs(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                            const int32_t& calCount)
{
    AFC_EMU_ARITH_TYPES(T, "Maxs");
    const auto s = emu::Arith<T>::Load(scalarValue);
    emu::Unary("Maxs", dst, src, calCount, [s](auto x) { return emu::Max(x, s); });
}

template <typename T>
__aicore__ inline void Mins(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                            const int32_t& calCount)
{
    AFC_EMU_ARITH_TYPES(T, "Mins");
    const auto s = emu::Arith<T>::Load(scalarValue);
    emu::Unary("Mins", dst, src, calCount, [s](auto x) { return emu::Min(x, s); });
}

template <typename T>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& calCount)
{
    static_assert(emu::IsOneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>::value,
                  "Duplicate supports 16- and 32-bit types");
    const char* api = "Duplicate";
    emu::RequireVector(api);
    emu::RequireTypeOnChip<T>(api);
    emu::CheckCount(api, calCount);
    if (calCount == 0) {
        return;
    }
    T* d = emu::VectorOperand(api, "dst", dst, calCount, true);
    for (int32_t i = 0; i < calCount; ++i) {
        d[i] = scalarValue;
    }
}

// ---- Cast (ascend.md 2.8: RoundMode and the pairs A2 supports) ----------------------

namespace emu {

// neighbours of x among the values of a 16-bit float type, by its bit pattern
template <typename N>
inline N FloatNeighbour(N v, bool up)
{
    uint16_t b = v.bits;
    const bool negative = (b & 0x8000u) != 0;
    if ((b & 0x7FFFu) == 0) {
        return N::FromBits(up ? 0x0001 : 0x8001);
    }
    if (up != negative) {
        b = static_cast<uint16_t>(b + 1);
    } else {
        b = static_cast<uint16_t>(b - 1);
    }
    return N::FromBits(b);
}

// round a float to a 16-bit float type with a RoundMode
template <typename N>
inline N RoundTo16(float x, RoundMode mode)
{
    const N nearest(x);
    const float back = static_cast<float>(nearest);
    if (x != x || back == x || mode == RoundMode::CAST_RINT || mode == RoundMode::CAST_NONE) {
        return nearest;
    }
    const N lo = back < x ? nearest : FloatNeighbour(nearest, false);
    const N hi = back > x ? nearest : FloatNeighbour(nearest, true);
    switch (mode) {
        case RoundMode::CAST_FLOOR: return lo;
        case RoundMode::CAST_CEIL: return hi;
        case RoundMode::CAST_TRUNC: return x > 0 ? lo : hi;
        case RoundMode::CAST_ODD: return (lo.bits & 1u) ? lo : hi;
        case RoundMode::CAST_ROUND: {
            const double dl = static_cast<double>(x) - static_cast<double>(static_cast<float>(lo));
            const double dh = static_cast<double>(static_cast<float>(hi)) - static_cast<double>(x);
            if (dl == dh) {
                return x > 0 ? hi : lo;  // ties away from zero
            }
            return dl < dh ? lo : hi;
        }
        default: return nearest;
    }
}

inline double RoundToInteger(double x, RoundMode mode)
{
    switch (mode) {
        case RoundMode::CAST_FLOOR: return std::floor(x);
        case RoundMode::CAST_CEIL: return std::ceil(x);
        case RoundMode::CAST_TRUNC: return std::trunc(x);
        case RoundMode::CAST_ROUND: return std::round(x);
        default: return std::nearbyint(x);
    }
}

template <typename I>
inline I SaturateTo(double v)
{
    if (v != v) {
        return 0;
    }
    if (v <= static_cast<double>(std::numeric_limits<I>::min())) {
        return std::numeric_limits<I>::min();
    }
    if (v >= static_cast<double>(std::numeric_limits<I>::max())) {
        return std::numeric_limits<I>::max();
    }
    return static_cast<I>(v);
}

template <typename T>
inline double ToDouble(T v)
{
    return static_cast<double>(static_cast<typename std::conditional<IsFloat16<T>::value, float, T>::type>(v));
}

template <typename D, typename S>
inline D ConvertOne(S v, RoundMode mode)
{
    if constexpr (std::is_same<D, half>::value || std::is_same<D, bfloat16_t>::value) {
        return RoundTo16<D>(static_cast<float>(ToDouble(v)), mode);
    } else if constexpr (std::is_same<D, float>::value) {
        if constexpr (std::is_integral<S>::value) {
            // long double holds every int64 exactly (x86's 64-bit mantissa), so an int64
            // is rounded to float once, not through double
            const long double x = static_cast<long double>(v);
            const float nearest = static_cast<float>(v);
            if (mode == RoundMode::CAST_RINT || mode == RoundMode::CAST_NONE ||
                static_cast<long double>(nearest) == x) {
                return nearest;
            }
            const float lo = static_cast<long double>(nearest) < x ? nearest : std::nextafter(nearest, -INFINITY);
            const float hi = static_cast<long double>(nearest) > x ? nearest : std::nextafter(nearest, INFINITY);
            if (mode == RoundMode::CAST_FLOOR) return lo;
            if (mode == RoundMode::CAST_CEIL) return hi;
            if (mode == RoundMode::CAST_TRUNC) return x > 0 ? lo : hi;
            return nearest;
        } else {
            return static_cast<float>(ToDouble(v));
        }
    } else {
        return SaturateTo<D>(RoundToInteger(ToDouble(v), mode));
    }
}

// the pairs and modes of the A2 Cast table (ascend.md 2.8)
template <typename D, typename S>
inline bool CastSupported(RoundMode mode)
{
    const bool none = mode == RoundMode::CAST_NONE;
    const bool directed = mode != RoundMode::CAST_ODD;
    if (std::is_same<S, half>::value && std::is_same<D, float>::value) return none;
    if (std::is_same<S, float>::value && std::is_same<D, half>::value) return true;
    if (std::is_same<S, bfloat16_t>::value && std::is_same<D, float>::value) return none;
    if (std::is_same<S, float>::value && std::is_same<D, bfloat16_t>::value) return directed;
    if (std::is_same<S, float>::value && IsOneOf<D, int32_t, int16_t, int64_t>::value) return directed;
    if (std::is_same<S, int32_t>::value && std::is_same<D, float>::value) return directed;
    if (std::is_same<S, half>::value && IsOneOf<D, int8_t, uint8_t, int16_t, int32_t>::value) return directed;
    if (IsOneOf<S, int8_t, uint8_t>::value && std::is_same<D, half>::value) return none;
    if (std::is_same<S, bfloat16_t>::value && std::is_same<D, int32_t>::value) return directed;
    // the int64 conversions are A2/A3 only (asc-devkit dav_c220 vconv_s642f32*, vconv_s642s32)
    const bool a2 = Chip().arch == 2201;
    if (std::is_same<S, int64_t>::value && std::is_same<D, float>::value) return a2 && directed && !none;
    if (std::is_same<S, int64_t>::value && std::is_same<D, int32_t>::value) return a2 && none;
    return false;
}

inline const char* RoundModeName(RoundMode m)
{
    static const char* const names[] = {"CAST_NONE", "CAST_RINT",  "CAST_FLOOR", "CAST_CEIL",
                                        "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
    return names[static_cast<int>(m)];
}

}  // namespace emu

template <typename T, typename U>
__aicore__ inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                            const uint32_t calCount)
{
    const char* api = "Cast";
    emu::RequireVector(api);
    emu::RequireTypeOnChip<T>(api);
    emu::RequireTypeOnChip<U>(api);
    if (!emu::CastSupported<T, U>(roundMode)) {
        emu::Fail("Cast from %s to %s with RoundMode::%s is not supported (ascend.md 2.8)", emu::TypeName<U>(),
                  emu::TypeName<T>(), emu::RoundModeName(roundMode));
    }
    if (calCount == 0) {
        return;
    }
    emu::CheckOverlap(api, dst, calCount, src, calCount);
    const U* s = emu::VectorOperand(api, "src", src, calCount, false);
    T* d = emu::VectorOperand(api, "dst", dst, calCount, true);
    if (static_cast<const void*>(s) == static_cast<const void*>(d)) {
        std::vector<U> copy(s, s + calCount);
        for (uint32_t i = 0; i < calCount; ++i) {
            d[i] = emu::ConvertOne<T, U>(copy[i], roundMode);
        }
        return;
    }
    for (uint32_t i = 0; i < calCount; ++i) {
        d[i] = emu::ConvertOne<T, U>(s[i], roundMode);
    }
}

// ---- reductions: one value into dst[0] (ascend.md 2.8) -----------------------------

namespace emu {

// A2's count form: a tree inside each 256-byte repeat, repeats accumulated in order,
// every addition rounded to T
template <typename T, typename F>
inline T ReduceRepeats(const T* src, int64_t count, F combine)
{
    using A = Arith<T>;
    const int64_t perRepeat = 256 / static_cast<int64_t>(sizeof(T));
    std::vector<T> lanes(static_cast<size_t>(perRepeat));
    T total{};
    for (int64_t start = 0; start < count; start += perRepeat) {
        const int64_t n = count - start < perRepeat ? count - start : perRepeat;
        for (int64_t i = 0; i < n; ++i) {
            lanes[static_cast<size_t>(i)] = src[start + i];
        }
        int64_t width = n;
        while (width > 1) {
            const int64_t half_width = (width + 1) / 2;
            for (int64_t i = 0; i + half_width < width; ++i) {
                lanes[static_cast<size_t>(i)] = A::Store(
                    combine(A::Load(lanes[static_cast<size_t>(i)]), A::Load(lanes[static_cast<size_t>(i + half_width)])));
            }
            width = half_width;
        }
        total = start == 0 ? lanes[0] : A::Store(combine(A::Load(total), A::Load(lanes[0])));
    }
    return total;
}

template <typename T, typename F>
inline void Reduce(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                   const LocalTensor<T>& sharedTmpBuffer, int32_t count, bool calIndex, F combine)
{
    RequireVector(api);
    CheckCount(api, count);
    if (count < 1) {
        Fail("%s of no elements", api);
    }
    const uint64_t dstCount = calIndex ? 2 : 1;
    CheckOverlap(api, dst, dstCount, src, count);
    RequireSpace(api, "sharedTmpBuffer", sharedTmpBuffer, Space::UB);
    Operand(api, "sharedTmpBuffer", sharedTmpBuffer, 0, Pipe::V, true);
    const T* s = VectorOperand(api, "src", src, count, false);
    T* d = VectorOperand(api, "dst", dst, dstCount, true);
    const T value = ReduceRepeats(s, count, combine);
    d[0] = value;
    if (calIndex) {
        // the first index holding the value, stored in T's bits (ascend.md 2.8)
        uint32_t index = 0;
        for (int32_t i = 0; i < count; ++i) {
            if (Arith<T>::Load(s[i]) == Arith<T>::Load(value)) {
                index = static_cast<uint32_t>(i);
                break;
            }
        }
        T bits{};
        std::memcpy(&bits, &index, sizeof(T) < sizeof(index) ? sizeof(T) : sizeof(index));
        d[1] = bits;
    }
}

}  // namespace emu

template <typename T>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count)
{
    AFC_EMU_FLOAT_TYPES(T, "ReduceSum");
    emu::Reduce("ReduceSum", dst, src, sharedTmpBuffer, count, false, [](float a, float b) { return a + b; });
}

template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count, bool calIndex = false)
{
    AFC_EMU_FLOAT_TYPES(T, "ReduceMax");
    emu::Reduce("ReduceMax", dst, src, sharedTmpBuffer, count, calIndex,
                [](float a, float b) { return emu::Max(a, b); });
}

template <typename T>
__aicore__ inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count, bool calIndex = false)
{
    AFC_EMU_FLOAT_TYPES(T, "ReduceMin");
    emu::Reduce("ReduceMin", dst, src, sharedTmpBuffer, count, calIndex,
                [](float a, float b) { return emu::Min(a, b); });
}

// ---- Compare / Select: a bitmask, one bit per element (ascend.md 2.8) --------------

template <typename T, typename U>
__aicore__ inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                               CMPMODE cmpMode, uint32_t calCount)
{
    static_assert(emu::IsOneOf<T, half, float, int32_t>::value, "Compare supports half, float and int32_t");
    static_assert(emu::IsOneOf<U, uint8_t, int8_t>::value, "Compare writes a uint8_t/int8_t bitmask");
    const char* api = "Compare";
    emu::RequireVector(api);
    if (std::is_same<T, int32_t>::value && cmpMode != CMPMODE::EQ) {
        emu::Fail("Compare of int32_t supports CMPMODE::EQ only (ascend.md 2.8)");
    }
    uint64_t count = calCount;
    if ((count * sizeof(T)) % 256 != 0) {
        if (emu::Chip().strictTruncation) {
            emu::Fail("Compare of %u elements (%llu bytes) is not a multiple of 256 bytes: the hardware ignores the "
                      "last %llu elements",
                      calCount, static_cast<unsigned long long>(count * sizeof(T)),
                      static_cast<unsigned long long>(count % (256 / sizeof(T))));
        }
        count = count * sizeof(T) / 256 * 256 / sizeof(T);
    }
    if (count == 0) {
        return;
    }
    const T* a = emu::VectorOperand(api, "src0", src0, count, false);
    const T* b = emu::VectorOperand(api, "src1", src1, count, false);
    U* d = emu::VectorOperand(api, "dst", dst, (count + 7) / 8, true);
    using A = emu::Arith<T>;
    for (uint64_t i = 0; i < count; i += 8) {
        uint8_t byte = 0;
        for (uint64_t j = 0; j < 8 && i + j < count; ++j) {
            const auto x = A::Load(a[i + j]);
            const auto y = A::Load(b[i + j]);
            bool bit = false;
            switch (cmpMode) {
                case CMPMODE::LT: bit = x < y; break;
                case CMPMODE::GT: bit = x > y; break;
                case CMPMODE::EQ: bit = x == y; break;
                case CMPMODE::LE: bit = x <= y; break;
                case CMPMODE::GE: bit = x >= y; break;
                case CMPMODE::NE: bit = x != y; break;
            }
            byte = static_cast<uint8_t>(byte | (bit ? 1u << j : 0u));
        }
        d[i / 8] = static_cast<U>(byte);
    }
}

namespace emu {

template <typename T, typename U, typename Other>
inline void SelectImpl(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                       Other other, SELMODE selMode, uint32_t calCount, SELMODE expected)
{
    const char* api = "Select";
    RequireVector(api);
    if (selMode != expected) {
        Fail("Select: only VSEL_TENSOR_TENSOR_MODE (two tensors) and VSEL_TENSOR_SCALAR_MODE (tensor and scalar) are "
             "emulated, in the matching overload");
    }
    if (Chip().arch == 1001) {
        Fail("Select: %s supports only VSEL_CMPMASK_SPR (ascend.md 2.8)", Chip().name);
    }
    if (calCount == 0) {
        return;
    }
    const U* m = VectorOperand(api, "selMask", selMask, (calCount + 7) / 8 * 8 / (8 * sizeof(U)), false);
    const T* a = VectorOperand(api, "src0", src0, calCount, false);
    T* d = VectorOperand(api, "dst", dst, calCount, true);
    const uint8_t* bits = reinterpret_cast<const uint8_t*>(m);
    std::vector<T> result(calCount);
    for (uint32_t i = 0; i < calCount; ++i) {
        const bool take0 = (bits[i / 8] >> (i % 8)) & 1u;
        result[i] = take0 ? a[i] : other(i);
    }
    std::memcpy(d, result.data(), calCount * sizeof(T));
}

}  // namespace emu

template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              const LocalTensor<T>& src1, SELMODE selMode, uint32_t calCount)
{
    const T* b = emu::VectorOperand("Select", "src1", src1, calCount, false);
    emu::SelectImpl(dst, selMask, src0, [b](uint32_t i) { return b[i]; }, selMode, calCount,
                    SELMODE::VSEL_TENSOR_TENSOR_MODE);
}

template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              T src1, SELMODE selMode, uint32_t calCount)
{
    emu::SelectImpl(dst, selMask, src0, [src1](uint32_t) { return src1; }, selMode, calCount,
                    SELMODE::VSEL_TENSOR_SCALAR_MODE);
}

// Gather, count form (asc-devkit docs/api/context/Gather.md): dst[i] is the element of
// src at byte offset srcBaseAddr + srcOffset[i] (from src's address); every offset is a
// multiple of sizeof(T) and stays inside src's buffer. A2 types: int16_t, uint16_t,
// int32_t, uint32_t, float, half, bfloat16_t. The doc lists Atlas A2/A3 and the AI Core
// of the Atlas inference series (310P, no bfloat16_t there; CANN 8.1 dav_m200 implements
// it with vgather), not its Vector Cores and not the Atlas training series (910, whose
// dav_c100 GatherImpl reports "not support").
template <typename T>
__aicore__ inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                              const LocalTensor<uint32_t>& srcOffset, const uint32_t srcBaseAddr,
                              const uint32_t count)
{
    static_assert(emu::IsOneOf<T, int16_t, uint16_t, int32_t, uint32_t, float, half, bfloat16_t>::value,
                  "Gather supports 16- and 32-bit types (asc-devkit Gather.md)");
    const char* api = "Gather";
    emu::RequireVector(api);
    emu::RequireTypeOnChip<T>(api);
    if (emu::Chip().arch != 2201 && emu::Chip().arch != 2002) {
        emu::Fail("%s is not available on %s (Atlas A2/A3 and the Atlas inference series AI Core only, "
                  "asc-devkit Gather.md)",
                  api, emu::Chip().name);
    }
    if (emu::Chip().arch == 2002 && (emu::State().kernelType == KERNEL_TYPE_MIX_VECTOR_CORE ||
                                     emu::State().kernelType == KERNEL_TYPE_VECTORCORE)) {
        emu::Fail("%s is not available on the Vector Cores of %s (asc-devkit Gather.md): run it on the AI Core",
                  api, emu::Chip().name);
    }
    if (count == 0) {
        return;
    }
    emu::CheckOverlap(api, dst, count, srcOffset, count);
    const uint32_t* offsets = emu::VectorOperand(api, "srcOffset", srcOffset, count, false);
    uint64_t reach = 0;
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t at = static_cast<uint64_t>(srcBaseAddr) + offsets[i];
        if (at % sizeof(T) != 0) {
            emu::Fail("%s: srcBaseAddr + srcOffset[%u] = %llu bytes is not a multiple of %zu", api, i,
                      static_cast<unsigned long long>(at), sizeof(T));
        }
        reach = at / sizeof(T) + 1 > reach ? at / sizeof(T) + 1 : reach;
    }
    if (reach > src.GetSize()) {
        emu::Fail("%s: an offset reaches element %llu of src, which has %u from its address", api,
                  static_cast<unsigned long long>(reach - 1), src.GetSize());
    }
    emu::CheckOverlap(api, dst, count, src, reach);
    const T* s = emu::VectorOperand(api, "src", src, reach, false);
    std::vector<T> out(count);
    for (uint32_t i = 0; i < count; ++i) {
        out[i] = s[(static_cast<uint64_t>(srcBaseAddr) + offsets[i]) / sizeof(T)];
    }
    T* d = emu::VectorOperand(api, "dst", dst, count, true);
    std::memcpy(static_cast<void*>(d), out.data(), count * sizeof(T));
}

// ------------------------------------------------------------------------------------
// Data movement (ascend.md 2.7): DataCopy truncates to 32-byte multiples, DataCopyPad
// pads each block to 32 bytes in UB
// ------------------------------------------------------------------------------------

struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;  // 32-byte units
    uint16_t srcStride = 0; // gap between blocks, 32-byte units
    uint16_t dstStride = 0;
    DataCopyParams() = default;
    DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn)
    {
    }
};

struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;   // bytes
    uint32_t srcStride = 0;  // gap: bytes on the GM side, 32-byte blocks on the UB side
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                      const uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn)
    {
    }
};

template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue{};
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue)
    {
    }
};

// ND -> NZ on the way into L1 (ascend.md 2.10). Defaults are the real header's
// (asc-devkit kernel_struct_data_copy.h:259): every field 0, so a copy that leaves ndNum
// unset moves nothing and one that leaves dstNzNStride unset is out of its range
struct Nd2NzParams {
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
};

namespace emu {

// the pipe that moves data from one buffer to another (ascend.md 1.6)
inline Pipe PathPipe(const char* api, Space src, Space dst)
{
    if (src == Space::GM && (dst == Space::UB || dst == Space::L1)) return Pipe::MTE2;
    if (src == Space::UB && dst == Space::GM) return Pipe::MTE3;
    if (src == Space::UB && dst == Space::UB) return Pipe::V;
    if (src == Space::UB && dst == Space::L1) return Pipe::MTE3;
    if (src == Space::L1 && (dst == Space::L0A || dst == Space::L0B)) return Pipe::MTE1;
    if (src == Space::L0C && dst == Space::GM) return Pipe::FIX;
    Fail("%s: there is no data path %s -> %s (ascend.md 1.6)", api, SpaceName(src), SpaceName(dst));
}

// the bytes DataCopy moves: count * sizeof(T) rounded down to 32 (ascend.md 2.7)
template <typename T>
inline uint64_t CopyBytes(const char* api, uint64_t count)
{
    const uint64_t bytes = count * sizeof(T);
    if (bytes % 32 != 0 && Chip().strictTruncation) {
        Fail("%s of %llu elements (%llu bytes) is not a multiple of 32 bytes: the hardware copies only %llu bytes "
             "(use DataCopyPad, or pad the length)",
             api, static_cast<unsigned long long>(count), static_cast<unsigned long long>(bytes),
             static_cast<unsigned long long>(bytes / 32 * 32));
    }
    return bytes / 32 * 32;
}

inline void CheckGmAlignment(const char* api, const void* p, size_t width)
{
    if (reinterpret_cast<uintptr_t>(p) % width != 0) {
        Fail("%s: GM address %p is not aligned to the element size %zu (ascend.md 2.7)", api, p, width);
    }
}

template <typename T>
inline void PoisonPadding(uint8_t* begin, uint64_t bytes)
{
    // DataCopyPad leaves the lanes up to the 32-byte boundary undefined without isPad:
    // floating types read NaN there, so a kernel that uses them shows it
    if (std::is_floating_point<T>::value || IsFloat16<T>::value) {
        std::memset(begin, 0xFF, bytes);
    }
}

template <typename T>
inline void StridedCopy(const char* api, uint8_t* dst, const uint8_t* src, const DataCopyParams& p)
{
    (void)api;
    const uint64_t len = static_cast<uint64_t>(p.blockLen) * 32;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        std::memmove(dst + i * (len + static_cast<uint64_t>(p.dstStride) * 32),
                     src + i * (len + static_cast<uint64_t>(p.srcStride) * 32), len);
    }
}

inline uint64_t StridedElements(const DataCopyParams& p, size_t width, bool dstSide)
{
    if (p.blockCount == 0) {
        return 0;
    }
    const uint64_t len = static_cast<uint64_t>(p.blockLen) * 32;
    const uint64_t gap = static_cast<uint64_t>(dstSide ? p.dstStride : p.srcStride) * 32;
    return ((p.blockCount - 1) * (len + gap) + len) / width;
}

// the GM blocks of a strided DataCopy (the GM side's gaps are not accessed)
inline void StridedGmAccess(const char* api, const void* gm, const DataCopyParams& p, bool dstSide, int pipe,
                            bool write)
{
    const uint64_t len = static_cast<uint64_t>(p.blockLen) * 32;
    const uint64_t gap = static_cast<uint64_t>(dstSide ? p.dstStride : p.srcStride) * 32;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        GmAccess(api, static_cast<const uint8_t*>(gm) + i * (len + gap), len, pipe, write);
    }
}

inline void CheckParams(const char* api, const DataCopyParams& p)
{
    if (p.blockCount < 1 || p.blockCount > 4095) {
        Fail("%s: DataCopyParams.blockCount %u is not in [1, 4095] (ascend.md 2.7)", api, p.blockCount);
    }
}

}  // namespace emu

// GM -> UB/L1
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t calCount)
{
    const char* api = "DataCopy";
    emu::RequireTypeOnChip<T>(api);
    const emu::Pipe pipe = emu::PathPipe(api, emu::Space::GM, dst.space_);
    const uint64_t bytes = emu::CopyBytes<T>(api, calCount);
    src.Check(api, bytes / sizeof(T) == 0 ? 0 : bytes / sizeof(T) - 1);
    emu::CheckGmAlignment(api, src.addr_, sizeof(T));
    T* d = emu::Operand(api, "dst", dst, bytes / sizeof(T), pipe, true);
    emu::GmAccess(api, src.addr_, bytes, static_cast<int>(pipe), false);
    std::memcpy(d, src.addr_, bytes);
}

// UB -> GM
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount)
{
    const char* api = "DataCopy";
    emu::RequireTypeOnChip<T>(api);
    const emu::Pipe pipe = emu::PathPipe(api, src.space_, emu::Space::GM);
    const uint64_t bytes = emu::CopyBytes<T>(api, calCount);
    dst.Check(api, bytes / sizeof(T) == 0 ? 0 : bytes / sizeof(T) - 1);
    emu::CheckGmAlignment(api, dst.addr_, sizeof(T));
    const T* s = emu::Operand(api, "src", src, bytes / sizeof(T), pipe, false);
    emu::GmAccess(api, dst.addr_, bytes, static_cast<int>(pipe), true);
    emu::StoreGm<T>(api, dst.addr_, s, bytes / sizeof(T), src.space_);
}

// UB -> UB, UB -> L1
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount)
{
    const char* api = "DataCopy";
    emu::RequireTypeOnChip<T>(api);
    const emu::Pipe pipe = emu::PathPipe(api, src.space_, dst.space_);
    const uint64_t bytes = emu::CopyBytes<T>(api, calCount);
    emu::CheckOverlap(api, dst, bytes / sizeof(T), src, bytes / sizeof(T));
    const T* s = emu::Operand(api, "src", src, bytes / sizeof(T), pipe, false);
    T* d = emu::Operand(api, "dst", dst, bytes / sizeof(T), pipe, true);
    std::memmove(d, s, bytes);
}

// strided forms: blockCount blocks of blockLen x 32 bytes, gaps in 32-byte units
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                const DataCopyParams& repeatParams)
{
    const char* api = "DataCopy(DataCopyParams)";
    emu::RequireTypeOnChip<T>(api);
    emu::CheckParams(api, repeatParams);
    const emu::Pipe pipe = emu::PathPipe(api, emu::Space::GM, dst.space_);
    const uint64_t srcElems = emu::StridedElements(repeatParams, sizeof(T), false);
    src.Check(api, srcElems == 0 ? 0 : srcElems - 1);
    emu::CheckGm(api, src.addr_, srcElems * sizeof(T));
    T* d = emu::Operand(api, "dst", dst, emu::StridedElements(repeatParams, sizeof(T), true), pipe, true);
    emu::StridedGmAccess(api, src.addr_, repeatParams, false, static_cast<int>(pipe), false);
    emu::StridedCopy<T>(api, reinterpret_cast<uint8_t*>(d), reinterpret_cast<const uint8_t*>(src.addr_), repeatParams);
}

template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                const DataCopyParams& repeatParams)
{
    const char* api = "DataCopy(DataCopyParams)";
    emu::RequireTypeOnChip<T>(api);
    emu::CheckParams(api, repeatParams);
    const emu::Pipe pipe = emu::PathPipe(api, src.space_, emu::Space::GM);
    const uint64_t dstElems = emu::StridedElements(repeatParams, sizeof(T), true);
    dst.Check(api, dstElems == 0 ? 0 : dstElems - 1);
    emu::CheckGm(api, dst.addr_, dstElems * sizeof(T));
    const T* s = emu::Operand(api, "src", src, emu::StridedElements(repeatParams, sizeof(T), false), pipe, false);
    emu::StridedGmAccess(api, dst.addr_, repeatParams, true, static_cast<int>(pipe), true);
    const uint64_t len = static_cast<uint64_t>(repeatParams.blockLen) * 32;
    for (uint64_t i = 0; i < repeatParams.blockCount; ++i) {
        emu::StoreGm<T>(api, reinterpret_cast<uint8_t*>(dst.addr_) + i * (len + repeatParams.dstStride * 32ull),
                        reinterpret_cast<const uint8_t*>(s) + i * (len + repeatParams.srcStride * 32ull),
                        len / sizeof(T), src.space_);
    }
}

template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                const DataCopyParams& repeatParams)
{
    const char* api = "DataCopy(DataCopyParams)";
    emu::RequireTypeOnChip<T>(api);
    emu::CheckParams(api, repeatParams);
    const emu::Pipe pipe = emu::PathPipe(api, src.space_, dst.space_);
    const T* s = emu::Operand(api, "src", src, emu::StridedElements(repeatParams, sizeof(T), false), pipe, false);
    T* d = emu::Operand(api, "dst", dst, emu::StridedElements(repeatParams, sizeof(T), true), pipe, true);
    emu::StridedCopy<T>(api, reinterpret_cast<uint8_t*>(d), reinterpret_cast<const uint8_t*>(s), repeatParams);
}

namespace emu {

inline void CheckExtParams(const char* api, const DataCopyExtParams& p, size_t width)
{
    if (!Chip().dataCopyPad) {
        Fail("%s is not available on %s (A2/A3/310B only, ascend.md 2.7): use DataCopy on 32-byte multiples", api,
             Chip().name);
    }
    if (p.blockCount < 1 || p.blockCount > 4095) {
        Fail("%s: DataCopyExtParams.blockCount %u is not in [1, 4095] (ascend.md 2.7)", api, p.blockCount);
    }
    if (p.blockLen > 2097151 || p.blockLen % width != 0) {
        Fail("%s: DataCopyExtParams.blockLen %u must be a multiple of the element size %zu in [0, 2097151]", api,
             p.blockLen, width);
    }
}

}  // namespace emu

// GM -> UB, each block padded to 32 bytes in UB; UB strides in 32-byte blocks
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                   const DataCopyExtParams& dataCopyParams, const DataCopyPadExtParams<T>& padParams)
{
    const char* api = "DataCopyPad";
    emu::RequireTypeOnChip<T>(api);
    emu::CheckExtParams(api, dataCopyParams, sizeof(T));
    emu::RequireSpace(api, "dst", dst, emu::Space::UB);
    const emu::Pipe pipe = emu::Pipe::MTE2;
    const uint64_t left = padParams.isPad ? padParams.leftPadding : 0;
    const uint64_t right = padParams.isPad ? padParams.rightPadding : 0;
    if ((left + right) * sizeof(T) > 32) {
        emu::Fail("%s: left/right padding of %llu elements exceeds 32 bytes", api,
                  static_cast<unsigned long long>(left + right));
    }
    const uint64_t len = dataCopyParams.blockLen;
    const uint64_t padded = (len + (left + right) * sizeof(T) + 31) / 32 * 32;
    const uint64_t dstPitch = padded + static_cast<uint64_t>(dataCopyParams.dstStride) * 32;
    const uint64_t srcPitch = len + dataCopyParams.srcStride;
    const uint64_t n = dataCopyParams.blockCount;
    const uint64_t srcBytes = (n - 1) * srcPitch + len;
    emu::CheckGmAlignment(api, src.addr_, sizeof(T));
    src.Check(api, srcBytes / sizeof(T) == 0 ? 0 : srcBytes / sizeof(T) - 1);
    emu::CheckGm(api, src.addr_, srcBytes);
    uint8_t* d = reinterpret_cast<uint8_t*>(emu::Operand(api, "dst", dst, ((n - 1) * dstPitch + padded) / sizeof(T),
                                                         pipe, true));
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.addr_);
    for (uint64_t i = 0; i < n; ++i) {
        emu::GmAccess(api, s + i * srcPitch, len, static_cast<int>(pipe), false);
    }
    for (uint64_t i = 0; i < n; ++i) {
        uint8_t* block = d + i * dstPitch;
        if (padParams.isPad) {
            T* lanes = reinterpret_cast<T*>(block);
            for (uint64_t j = 0; j < padded / sizeof(T); ++j) {
                lanes[j] = padParams.paddingValue;
            }
        } else {
            emu::PoisonPadding<T>(block + len, padded - len);
        }
        std::memcpy(block + left * sizeof(T), s + i * srcPitch, len);
    }
}

// UB -> GM: exactly blockLen bytes per block; GM strides in bytes, UB strides in 32-byte blocks
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                   const DataCopyExtParams& dataCopyParams)
{
    const char* api = "DataCopyPad";
    emu::RequireTypeOnChip<T>(api);
    emu::CheckExtParams(api, dataCopyParams, sizeof(T));
    emu::RequireSpace(api, "src", src, emu::Space::UB);
    const uint64_t len = dataCopyParams.blockLen;
    const uint64_t padded = (len + 31) / 32 * 32;
    const uint64_t srcPitch = padded + static_cast<uint64_t>(dataCopyParams.srcStride) * 32;
    const uint64_t dstPitch = len + dataCopyParams.dstStride;
    const uint64_t n = dataCopyParams.blockCount;
    const uint64_t dstBytes = (n - 1) * dstPitch + len;
    emu::CheckGmAlignment(api, dst.addr_, sizeof(T));
    dst.Check(api, dstBytes / sizeof(T) == 0 ? 0 : dstBytes / sizeof(T) - 1);
    emu::CheckGm(api, dst.addr_, dstBytes);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(
        emu::Operand(api, "src", src, ((n - 1) * srcPitch + len) / sizeof(T), emu::Pipe::MTE3, false));
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.addr_);
    for (uint64_t i = 0; i < n; ++i) {
        emu::GmAccess(api, d + i * dstPitch, len, static_cast<int>(emu::Pipe::MTE3), true);
        emu::StoreGm<T>(api, d + i * dstPitch, s + i * srcPitch, len / sizeof(T), emu::Space::UB);
    }
}

// ------------------------------------------------------------------------------------
// Cube path (ascend.md 1.5, 2.10): ND -> Nz into L1, LoadData into L0A (Zz) / L0B (Zn),
// Mmad into L0C (Nz, 16x16 fractals), Fixpipe Nz -> ND into GM
// ------------------------------------------------------------------------------------

namespace emu {

template <typename T>
constexpr uint32_t C0()
{
    return 32 / static_cast<uint32_t>(sizeof(T));
}

template <typename T>
inline void Nd2Nz(const char* api, uint8_t* dst, const uint8_t* src, const Nd2NzParams& p)
{
    const uint64_t c0 = C0<T>();
    for (uint64_t nd = 0; nd < p.ndNum; ++nd) {
        for (uint64_t r = 0; r < p.nValue; ++r) {
            for (uint64_t c = 0; c < p.dValue; ++c) {
                const uint64_t from = nd * p.srcNdMatrixStride + r * p.srcDValue + c;
                const uint64_t to = nd * p.dstNzMatrixStride + (c / c0) * p.dstNzC0Stride * c0 +
                                    r * p.dstNzNStride * c0 + c % c0;
                std::memcpy(dst + to * sizeof(T), src + from * sizeof(T), sizeof(T));
            }
        }
    }
    (void)api;
}

inline uint64_t Nd2NzSrcElements(const Nd2NzParams& p)
{
    if (p.nValue == 0 || p.dValue == 0 || p.ndNum == 0) {
        return 0;
    }
    return (p.ndNum - 1ull) * p.srcNdMatrixStride + (p.nValue - 1ull) * p.srcDValue + p.dValue;
}

template <typename T>
inline uint64_t Nd2NzDstElements(const Nd2NzParams& p)
{
    if (p.nValue == 0 || p.dValue == 0 || p.ndNum == 0) {
        return 0;
    }
    const uint64_t c0 = C0<T>();
    return (p.ndNum - 1ull) * p.dstNzMatrixStride + ((p.dValue - 1ull) / c0) * p.dstNzC0Stride * c0 +
           (p.nValue - 1ull) * p.dstNzNStride * c0 + c0;
}

// ndNum, nValue or dValue 0 is a NOP (asc-devkit DataCopy（GMToL1随路转换-ND2NZ搬运）.md);
// otherwise dstNzNStride is in [1, 16384] and the Nz columns hold nValue rows
template <typename T>
inline void CheckNd2Nz(const char* api, const LocalTensor<T>& dst, const Nd2NzParams& p)
{
    RequireSpace(api, "dst", dst, Space::L1);
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) {
        return;
    }
    if (p.dstNzNStride < 1 || p.dstNzNStride > 16384) {
        Fail("%s: Nd2NzParams.dstNzNStride %u is not in [1, 16384]", api, p.dstNzNStride);
    }
    if (p.dstNzC0Stride < p.nValue) {
        Fail("%s: Nd2NzParams.dstNzC0Stride %u must cover nValue %u rows", api, p.dstNzC0Stride, p.nValue);
    }
}

}  // namespace emu

template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& intriParams)
{
    const char* api = "DataCopy(Nd2NzParams)";
    emu::RequireTypeOnChip<T>(api);
    emu::CheckNd2Nz(api, dst, intriParams);
    const uint64_t srcElems = emu::Nd2NzSrcElements(intriParams);
    src.Check(api, srcElems == 0 ? 0 : srcElems - 1);
    emu::CheckGm(api, src.addr_, srcElems * sizeof(T));
    T* d = emu::Operand(api, "dst", dst, emu::Nd2NzDstElements<T>(intriParams), emu::Pipe::MTE2, true);
    for (uint64_t nd = 0; nd < intriParams.ndNum; ++nd) {
        for (uint64_t r = 0; r < intriParams.nValue; ++r) {
            const uint64_t at = nd * intriParams.srcNdMatrixStride + r * intriParams.srcDValue;
            emu::GmAccess(api, src.addr_ + at, intriParams.dValue * sizeof(T), static_cast<int>(emu::Pipe::MTE2), false);
        }
    }
    emu::Nd2Nz<T>(api, reinterpret_cast<uint8_t*>(d), reinterpret_cast<const uint8_t*>(src.addr_), intriParams);
}

// UB -> L1 with ND -> NZ: asc-devkit documents it for TSCM on 2201; the 1001/2002
// implementations (CANN 8.1 dav_c100/dav_m200 kernel_operator_data_copy_impl.h) have no
// UB -> A1/B1 Nd2Nz (dav_m200: "not support"), so coupled chips copy the C0-column strips
// with DataCopyParams instead (the Ascend samples' CopyND2NZ)
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const Nd2NzParams& intriParams)
{
    const char* api = "DataCopy(Nd2NzParams)";
    emu::RequireTypeOnChip<T>(api);
    if (emu::Chip().coupled) {
        emu::Fail("%s from VECIN/VECOUT to A1/B1 is not supported on %s: copy the C0-column strips with "
                  "DataCopyParams",
                  api, emu::Chip().name);
    }
    emu::CheckNd2Nz(api, dst, intriParams);
    emu::RequireSpace(api, "src", src, emu::Space::UB);
    const T* s = emu::Operand(api, "src", src, emu::Nd2NzSrcElements(intriParams), emu::Pipe::MTE3, false);
    T* d = emu::Operand(api, "dst", dst, emu::Nd2NzDstElements<T>(intriParams), emu::Pipe::MTE3, true);
    emu::Nd2Nz<T>(api, reinterpret_cast<uint8_t*>(d), reinterpret_cast<const uint8_t*>(s), intriParams);
}

// defaults as in the real header (asc-devkit kernel_struct_mm.h:42): all 0
struct LoadData2DParams {
    uint16_t startIndex = 0;  // first fractal (512 bytes) of the source
    uint8_t repeatTimes = 0;  // fractals to move (0: a NOP, LoadData_2D.md)
    uint16_t srcStride = 0;   // source fractals between two moves
    uint8_t sid = 0;
    uint16_t dstGap = 0;      // fractals skipped in the destination after each move
    bool ifTranspose = false; // transpose each 16x16 fractal (16-bit types only)
    uint8_t addrMode = 0;
};

namespace emu {

// `repeat` 512-byte fractals from L1 (start, start + srcStride, ...) to L0A/L0B, each
// transposed as a 16x16 matrix of 16-bit elements if `transpose`
template <typename T>
inline void LoadFractals(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t start,
                         uint64_t repeat, uint64_t srcStride, uint64_t dstGap, bool transpose)
{
    RequireCube(api);
    RequireTypeOnChip<T>(api);
    RequireSpace(api, "src", src, Space::L1);
    if (dst.space_ != Space::L0A && dst.space_ != Space::L0B) {
        Fail("%s: dst is in %s, it writes L0A or L0B", api, SpaceName(dst.space_));
    }
    if (repeat == 0) {
        return;  // repeatTimes = 0 moves nothing (asc-devkit LoadData_2D.md)
    }
    constexpr uint64_t fractal = 512;
    const uint64_t srcEnd = (start + (repeat - 1) * srcStride + 1) * fractal;
    const uint64_t dstEnd = ((repeat - 1) * (1 + dstGap) + 1) * fractal;
    const uint8_t* s = reinterpret_cast<const uint8_t*>(Operand(api, "src", src, srcEnd / sizeof(T), Pipe::MTE1,
                                                                false));
    uint8_t* d = reinterpret_cast<uint8_t*>(Operand(api, "dst", dst, dstEnd / sizeof(T), Pipe::MTE1, true));
    for (uint64_t i = 0; i < repeat; ++i) {
        const uint8_t* from = s + (start + i * srcStride) * fractal;
        uint8_t* to = d + i * (1 + dstGap) * fractal;
        if (!transpose) {
            std::memmove(to, from, fractal);
            continue;
        }
        uint16_t block[256];
        std::memcpy(block, from, fractal);
        uint16_t out[256];
        for (int r = 0; r < 16; ++r) {
            for (int c = 0; c < 16; ++c) {
                out[c * 16 + r] = block[r * 16 + c];
            }
        }
        std::memcpy(to, out, fractal);
    }
}

}  // namespace emu

// L1 -> L0A / L0B, one 512-byte fractal per repeat (ascend.md 2.10)
template <typename T>
__aicore__ inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                const LoadData2DParams& loadDataParams)
{
    const LoadData2DParams& p = loadDataParams;
    // ifTranspose only on A1->A2 / B1->B2 and for uint16_t/int16_t/half (asc-devkit Load2D.md)
    if (p.ifTranspose && !emu::IsOneOf<T, half, int16_t, uint16_t>::value) {
        emu::Fail("LoadData: ifTranspose takes half, int16_t or uint16_t, not %s", emu::TypeName<T>());
    }
    emu::LoadFractals("LoadData", dst, src, p.startIndex, p.repeatTimes, p.srcStride, p.dstGap, p.ifTranspose);
}

// L1 -> L0A / L0B transposing one 16x16 fractal of a 16-bit type per repeat
// (asc-devkit LoadDataWithTranspose.md; 8- and 32-bit types pair two fractals into one
// square, which afc does not emit)
struct LoadData2dTransposeParams {  // defaults: asc-devkit kernel_struct_mm.h:94
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
};

template <typename T>
__aicore__ inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                             const LoadData2dTransposeParams& params)
{
    static_assert(sizeof(T) == 2, "LoadDataWithTranspose is emulated for 16-bit types");
    const LoadData2dTransposeParams& p = params;
    emu::LoadFractals("LoadDataWithTranspose", dst, src, p.startIndex, p.repeatTimes, p.srcStride, p.dstGap, true);
}

// Load3Dv2 (image to column, asc-devkit Load3D): the source in L1 is an NC1HWC0 feature
// map of channelSize channels (C1 = channelSize / C0 groups of C0 contiguous channels),
// l1H rows and l1W columns. The im2col matrix has one row per output pixel (oh, ow) and
// one column per tap k = ((c1 * filterH + r) * filterW + s) * C0 + c0, reading
// fmap[c, oh*strideH + r*dilationH - padTop, ow*strideW + s*dilationW - padLeft], and
// padValue outside the map (padList = {left, right, top, bottom}). The load writes rows
// mStartPt.. (mExtension, a multiple of 16) and columns kStartPt.. (kExtension, a
// multiple of C0): into L0A as Zz [pixels x taps]; into L0B as Zn with the pixels along
// K and the taps along N (so a 1x1 load of a [K x N] Nz matrix gives its Zn, the
// asc-devkit sample mmad_s8_f16_f32 case 3.3).
template <typename T>
struct LoadData3DParamsV2 {
    uint8_t padList[4] = {0, 0, 0, 0};
    uint16_t l1H = 0;
    uint16_t l1W = 0;
    uint16_t channelSize = 0;
    uint16_t kExtension = 0;
    uint16_t mExtension = 0;
    uint16_t kStartPt = 0;
    uint16_t mStartPt = 0;
    uint8_t strideW = 1;
    uint8_t strideH = 1;
    uint8_t filterW = 1;
    uint8_t filterH = 1;
    uint8_t dilationFilterW = 1;
    uint8_t dilationFilterH = 1;
    bool enTranspose = false;
    bool enSmallK = false;
    T padValue = T(0);
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
};

template <typename T>
__aicore__ inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                const LoadData3DParamsV2<T>& loadDataParams)
{
    const char* api = "LoadData(LoadData3DParamsV2)";
    emu::RequireCube(api);
    if (emu::Chip().arch == 1001) {
        emu::Fail("%s is not supported on %s (CANN 8.1 dav_c100 reports it; 1001 has Load3Dv1)", api,
                  emu::Chip().name);
    }
    emu::RequireTypeOnChip<T>(api);
    emu::RequireSpace(api, "src", src, emu::Space::L1);
    const bool toA = dst.space_ == emu::Space::L0A;
    if (!toA && dst.space_ != emu::Space::L0B) {
        emu::Fail("%s: dst is in %s, Load3Dv2 writes L0A or L0B", api, emu::SpaceName(dst.space_));
    }
    // A2: A1/A2 take 8-bit, half, bfloat16, 32-bit types; B1/B2 half, bfloat16, 32-bit
    if (!toA && sizeof(T) == 1) {
        emu::Fail("%s: B1 -> B2 takes half, bfloat16_t and 32-bit types, not %s", api, emu::TypeName<T>());
    }
    const LoadData3DParamsV2<T>& p = loadDataParams;
    constexpr uint64_t c0 = 32 / sizeof(T);
    if (p.enTranspose && toA) {
        emu::Fail("%s: enTranspose into L0A is not emulated", api);
    }
    if (p.mExtension == 0 || p.mExtension % 16 != 0 || p.kExtension == 0 || p.kExtension % c0 != 0 ||
        p.kStartPt % c0 != 0) {
        emu::Fail("%s: mExtension %u must be a positive multiple of 16, kExtension %u and kStartPt %u multiples "
                  "of %llu",
                  api, p.mExtension, p.kExtension, p.kStartPt, static_cast<unsigned long long>(c0));
    }
    if (p.channelSize == 0 || p.channelSize % c0 != 0 || p.l1H == 0 || p.l1W == 0) {
        emu::Fail("%s: channelSize %u must be a positive multiple of C0 = %llu and l1H, l1W positive", api,
                  p.channelSize, static_cast<unsigned long long>(c0));
    }
    if (p.strideW < 1 || p.strideH < 1 || p.filterW < 1 || p.filterH < 1 || p.dilationFilterW < 1 ||
        p.dilationFilterH < 1) {
        emu::Fail("%s: strides, filter sizes and dilations must be at least 1", api);
    }
    const int64_t kh = p.filterH, kw = p.filterW;
    const int64_t left = p.padList[0], right = p.padList[1], top = p.padList[2], bottom = p.padList[3];
    const int64_t ow = (p.l1W + left + right - p.dilationFilterW * (kw - 1) - 1) / p.strideW + 1;
    const int64_t oh = (p.l1H + top + bottom - p.dilationFilterH * (kh - 1) - 1) / p.strideH + 1;
    const uint64_t taps = static_cast<uint64_t>(p.channelSize) * kh * kw;
    if (ow < 1 || oh < 1) {
        emu::Fail("%s: the filter does not fit the padded %ux%u map", api, p.l1H, p.l1W);
    }
    if (static_cast<uint64_t>(p.kStartPt) + p.kExtension > taps) {
        emu::Fail("%s: columns %u..%u exceed the %llu taps of the map", api, p.kStartPt,
                  p.kStartPt + p.kExtension, static_cast<unsigned long long>(taps));
    }
    const uint64_t mapElems = static_cast<uint64_t>(p.channelSize) * p.l1H * p.l1W;
    const T* s = emu::Operand(api, "src", src, mapElems, emu::Pipe::MTE1, false);
    const uint64_t m1 = p.mExtension / 16;
    const uint64_t kGroups = toA ? p.kExtension / c0 : (p.kExtension + 15) / 16;
    const uint64_t dstElems = toA ? m1 * kGroups * 16 * c0 : (p.mExtension + c0 - 1) / c0 * kGroups * 16 * c0;
    std::vector<T> out(dstElems);
    for (uint64_t m = 0; m < p.mExtension; ++m) {
        const int64_t pixel = static_cast<int64_t>(p.mStartPt + m);
        const int64_t y = pixel / ow, x = pixel % ow;
        for (uint64_t k = 0; k < p.kExtension; ++k) {
            const uint64_t tap = p.kStartPt + k;
            const uint64_t cc0 = tap % c0, rest = tap / c0;
            const int64_t sx = static_cast<int64_t>(rest % kw), r = static_cast<int64_t>(rest / kw % kh);
            const uint64_t c1 = rest / (kw * kh);
            const int64_t ih = y * p.strideH + r * p.dilationFilterH - top;
            const int64_t iw = x * p.strideW + sx * p.dilationFilterW - left;
            T v = p.padValue;
            if (y < oh && ih >= 0 && ih < p.l1H && iw >= 0 && iw < p.l1W) {
                v = s[((c1 * p.l1H + static_cast<uint64_t>(ih)) * p.l1W + static_cast<uint64_t>(iw)) * c0 + cc0];
            }
            const uint64_t at = toA ? ((m / 16) * kGroups + k / c0) * 16 * c0 + (m % 16) * c0 + k % c0
                                    : ((m / c0) * kGroups + k / 16) * 16 * c0 + (k % 16) * c0 + m % c0;
            out[at] = v;
        }
    }
    T* d = emu::Operand(api, "dst", dst, dstElems, emu::Pipe::MTE1, true);
    std::memcpy(static_cast<void*>(d), out.data(), dstElems * sizeof(T));
}

struct MmadParams {
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    uint8_t unitFlag = 0;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;  // true: C = A B; false: C += A B
    bool isBias = false;
};

namespace emu {

template <typename D, typename A>
struct MmadTypes : std::false_type {};
template <>
struct MmadTypes<float, half> : std::true_type {};
template <>
struct MmadTypes<float, bfloat16_t> : std::true_type {};
template <>
struct MmadTypes<float, float> : std::true_type {};
template <>
struct MmadTypes<int32_t, int8_t> : std::true_type {};

}  // namespace emu

namespace emu {

// an accumulating Mmad into L0C bytes [begin, end) must not follow a small Mmad that wrote
// them without PipeBarrier<PIPE_M> between the two (a pipe race on the hardware); then
// this Mmad is the one the next must wait for, if its own tile is small
inline void OrderMmad(const char* api, bool accumulates, uint32_t begin, uint32_t end, const MmadParams& p,
                      const char* file, int line)
{
    std::vector<UnorderedMmad>& pending = State().unorderedMmads;
    for (const UnorderedMmad& u : pending) {
        if (accumulates && u.begin < end && begin < u.end) {
            Fail("%s at %s:%d: pipe race: accumulates into L0C address %u, which the Mmad at %s:%d wrote with "
                 "(m / 16) * (n / 16) = %d < 10, with no PipeBarrier<PIPE_M> between them (Mmad.md, 同步优化说明)",
                 api, file, line, begin, u.file, u.line, u.tiles);
        }
    }
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [&](const UnorderedMmad& u) { return u.begin < end && begin < u.end; }),
                  pending.end());
    const int tiles = (p.m / 16) * (p.n / 16);
    if (tiles < 10) {
        pending.push_back({begin, end, file, line, tiles});
    }
}

}  // namespace emu

// C (L0C, Nz of 16x16) = A (L0A, Zz) B (L0B, Zn) [+ C]. With m = 1 the cube runs in GEMV
// mode and reads A as one contiguous row of k elements (Mmad.md 约束说明, GEMV.md), not as
// Zz fractals. `file`/`line` are the caller's (g++'s __builtin_FILE/__builtin_LINE), for
// the pipe-race report; generated code never passes them.
template <typename T, typename U, typename S>
__aicore__ inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                            const MmadParams& mmadParams, const char* file = __builtin_FILE(),
                            int line = __builtin_LINE())
{
    static_assert(std::is_same<U, S>::value, "Mmad: A and B have the same type");
    static_assert(emu::MmadTypes<T, U>::value,
                  "Mmad supports half/bfloat16_t/float -> float and int8_t -> int32_t (ascend.md 2.10)");
    const char* api = "Mmad";
    emu::RequireCube(api);
    emu::RequireTypeOnChip<U>(api);
    // 1001/2002 have no float32 cube: 310P's Mmad takes int8/uint8 -> int32 and half ->
    // half/float (CANN 8.1 dav_m200 MmadCal); the training series computes float in half
    if (emu::Chip().coupled && !std::is_same<U, half>::value && !std::is_same<U, int8_t>::value) {
        emu::Fail("%s: %s has no %s cube (its Mmad takes half and int8_t)", api, emu::Chip().name,
                  emu::TypeName<U>());
    }
    emu::RequireSpace(api, "dst", dst, emu::Space::L0C);
    emu::RequireSpace(api, "fm", fm, emu::Space::L0A);
    emu::RequireSpace(api, "filter", filter, emu::Space::L0B);
    const MmadParams& p = mmadParams;
    if (p.m > 4095 || p.n > 4095 || p.k > 4095) {
        emu::Fail("%s: m, n and k must be in [0, 4095] (ascend.md 2.10)", api);
    }
    if (dst.addr_ % 1024 != 0) {
        emu::Fail("%s: dst address %u in L0C is not 1024-byte aligned (ascend.md 2.10)", api, dst.addr_);
    }
    const uint64_t c0 = emu::C0<U>();
    const uint64_t m1 = (p.m + 15) / 16, n1 = (p.n + 15) / 16, k1 = (p.k + c0 - 1) / c0;
    const bool gemv = p.m == 1;
    if (gemv && fm.addr_ % 512 != 0) {
        emu::Fail("%s: m = 1 (GEMV) needs the A row at a 512-byte aligned L0A address, got %u (Mmad.md)", api,
                  fm.addr_);
    }
    const U* a = emu::Operand(api, "fm", fm, gemv ? k1 * c0 : m1 * k1 * 16 * c0, emu::Pipe::M, false);
    const U* b = emu::Operand(api, "filter", filter, k1 * n1 * 16 * c0, emu::Pipe::M, false);
    if (!p.cmatrixInitVal) {
        emu::Operand(api, "dst", dst, m1 * n1 * 256, emu::Pipe::M, false);
    }
    T* c = emu::Operand(api, "dst", dst, m1 * n1 * 256, emu::Pipe::M, true);
    emu::OrderMmad(api, !p.cmatrixInitVal, dst.addr_, static_cast<uint32_t>(dst.addr_ + m1 * n1 * 256 * sizeof(T)),
                   p, file, line);
    using AA = emu::Arith<U>;
    for (uint64_t i = 0; i < p.m; ++i) {
        for (uint64_t j = 0; j < p.n; ++j) {
            const uint64_t at = ((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16;
            typename std::conditional<std::is_same<T, int32_t>::value, int64_t, float>::type acc = 0;
            for (uint64_t l = 0; l < p.k; ++l) {
                const uint64_t from = gemv ? l : ((i / 16) * k1 + l / c0) * 16 * c0 + (i % 16) * c0 + l % c0;
                const auto x = AA::Load(a[from]);
                const auto y = AA::Load(b[((l / c0) * n1 + j / 16) * 16 * c0 + (j % 16) * c0 + l % c0]);
                acc += static_cast<decltype(acc)>(x) * static_cast<decltype(acc)>(y);
            }
            c[at] = static_cast<T>(p.cmatrixInitVal ? acc : c[at] + acc);
        }
    }
}

enum class QuantMode_t : uint8_t { NoQuant = 0, F322F16, F322BF16 };
enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR };

struct FixpipeConfig {
    CO2Layout format;
};
inline constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
inline constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};

struct FixpipeParamsV220 {
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;  // rows of one Nz column in L0C (mSize rounded up to 16)
    uint32_t dstStride = 0;  // ND row length in GM, elements
    bool reluEn = false;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    uint8_t unitFlag = 0;
};

// L0C (Nz) -> GM (ND with CFG_ROW_MAJOR), converting and ReLU on the fly (ascend.md 2.10)
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
__aicore__ inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src,
                               const FixpipeParamsV220& intriParams)
{
    static_assert(std::is_same<U, float>::value || std::is_same<U, int32_t>::value,
                  "Fixpipe reads float or int32_t from L0C");
    const char* api = "Fixpipe";
    emu::RequireCube(api);
    emu::RequireTypeOnChip<T>(api);
    emu::RequireSpace(api, "src", src, emu::Space::L0C);
    const FixpipeParamsV220& p = intriParams;
    if (config.format != CO2Layout::ROW_MAJOR) {
        emu::Fail("%s: only CFG_ROW_MAJOR (Nz -> ND) is emulated", api);
    }
    // with NZ2ND (CFG_ROW_MAJOR): nSize in [1, 4095], mSize in [1, 8192], srcStride (in
    // C0 rows of 16 elements) covers mSize (asc-devkit docs/api/context/Fixpipe.md)
    if (p.nSize < 1 || p.nSize > 4095) {
        emu::Fail("%s: nSize %u is not in [1, 4095]", api, p.nSize);
    }
    if (p.mSize < 1 || p.mSize > 8192 || p.srcStride < p.mSize) {
        emu::Fail("%s: mSize %u must be in [1, 8192] and at most srcStride %u", api, p.mSize, p.srcStride);
    }
    if (p.dstStride < p.nSize) {
        emu::Fail("%s: dstStride %u (the ND row length) is shorter than nSize %u", api, p.dstStride, p.nSize);
    }
    const bool toHalf = p.quantPre == QuantMode_t::F322F16;
    const bool toBf16 = p.quantPre == QuantMode_t::F322BF16;
    if ((toHalf && !std::is_same<T, half>::value) || (toBf16 && !std::is_same<T, bfloat16_t>::value) ||
        (p.quantPre == QuantMode_t::NoQuant && !std::is_same<T, U>::value)) {
        emu::Fail("%s: quantPre does not convert %s to the GM type %s", api, emu::TypeName<U>(), emu::TypeName<T>());
    }
    const uint64_t n1 = (p.nSize + 15) / 16;
    const U* c = emu::Operand(api, "src", src, ((n1 - 1) * p.srcStride + p.mSize) * 16, emu::Pipe::FIX, false);
    const uint64_t dstElems = (p.mSize - 1ull) * p.dstStride + p.nSize;
    dst.Check(api, dstElems - 1);
    emu::CheckGm(api, dst.addr_, dstElems * sizeof(T));
    for (uint64_t i = 0; i < p.mSize; ++i) {
        emu::GmAccess(api, dst.addr_ + i * p.dstStride, p.nSize * sizeof(T), static_cast<int>(emu::Pipe::FIX), true);
    }
    for (uint64_t i = 0; i < p.mSize; ++i) {
        for (uint64_t j = 0; j < p.nSize; ++j) {
            U v = c[((j / 16) * p.srcStride + i) * 16 + j % 16];
            if (p.reluEn && v < 0) {
                v = 0;
            }
            const T out = T(v);
            emu::StoreGm<T>(api, dst.addr_ + i * p.dstStride + j, &out, 1, emu::Space::L0C);
        }
    }
}

// ------------------------------------------------------------------------------------
// CO1 -> CO2 on coupled chips (910, 310P: CO2 is UB, ascend.md 1.7): DataCopy with
// DataCopyEnhancedParams (asc-devkit include/basic_api/kernel_struct_data_copy.h; the
// CANN 8.1 dav_c100/dav_m200 DataCopyL0C2UBImpl, copy_matrix_cc_to_ubuf). In
// BLOCK_MODE_MATRIX a block is one 16x16 fractal: blockLen counts fractals (1024 bytes
// of float in L0C; the Ascend samples' coupled MatMul copies a 32x16 float result with
// blockCount 1, blockLen 2, and the asc-devkit dump code one int32 fractal, 1024 bytes,
// with blockLen 1). The fractals land in UB unchanged (Nz), converting float to half
// (CRMODE_F32toF16) and applying ReLU (isRelu) on the way. The copy runs on the vector
// pipe (the int32 overloads are __inout_pipe__(V); samples put M_V before it, V_M after).
// ------------------------------------------------------------------------------------

enum class BlockMode : uint8_t {
    BLOCK_MODE_NORMAL = 0,
    BLOCK_MODE_MATRIX,
    BLOCK_MODE_VECTOR,
    BLOCK_MODE_SMALL_CHANNEL,
    BLOCK_MODE_DEPTHWISE,
};

enum class DeqScale : uint8_t { DEQ_NONE = 0, DEQ, VDEQ, DEQ8, VDEQ8, DEQ16, VDEQ16 };

}  // namespace AscendC

// the padding mode of the CCE copy intrinsics (only PAD_NONE is emulated)
enum pad_t : uint8_t { PAD_NONE = 0, PAD_MODE1, PAD_MODE2, PAD_MODE3, PAD_MODE4, PAD_MODE5, PAD_MODE6, PAD_MODE7, PAD_MODE8 };

namespace AscendC {

struct DataCopyEnhancedParams {
    DataCopyEnhancedParams() = default;
    DataCopyEnhancedParams(const BlockMode blockModeIn, const DeqScale deqScaleIn, const uint64_t deqValueIn,
                           const uint8_t sidStoreModeIn, const bool isReluIn, const pad_t padModeIn,
                           const uint64_t padValueIn)
        : blockMode(blockModeIn),
          deqScale(deqScaleIn),
          deqValue(deqValueIn),
          sidStoreMode(sidStoreModeIn),
          isRelu(isReluIn),
          padMode(padModeIn),
          padValue(padValueIn)
    {
    }
    BlockMode blockMode = BlockMode::BLOCK_MODE_NORMAL;
    DeqScale deqScale = DeqScale::DEQ_NONE;
    uint64_t deqValue = 0;
    uint8_t sidStoreMode = 0;
    bool isRelu = false;
    pad_t padMode = pad_t::PAD_NONE;
    uint64_t padValue = 0;
    uint64_t deqTensorAddr = 0;
};

namespace emu {

template <typename T, typename U>
inline void CopyCo1ToCo2(const char* api, const LocalTensor<T>& dst, const LocalTensor<U>& src,
                         const DataCopyParams& p, const DataCopyEnhancedParams& e)
{
    if (!Chip().coupled) {
        Fail("%s: CO1 -> CO2 (L0C -> UB) exists on coupled chips (910, 310P) only; on %s CO2 is GM (Fixpipe)", api,
             Chip().name);
    }
    RequireSpace(api, "src", src, Space::L0C);
    RequireSpace(api, "dst", dst, Space::UB);
    if (e.blockMode == BlockMode::BLOCK_MODE_VECTOR) {
        Fail("%s: BLOCK_MODE_VECTOR (1x16 blocks) is not emulated: move whole 16x16 fractals (BLOCK_MODE_MATRIX)",
             api);
    }
    if (e.blockMode != BlockMode::BLOCK_MODE_MATRIX) {
        Fail("%s: CO1 -> CO2 takes blockMode BLOCK_MODE_MATRIX or BLOCK_MODE_VECTOR (asc-devkit DataCopyL0C2UBImpl)",
             api);
    }
    if (e.deqScale != DeqScale::DEQ_NONE || e.padMode != pad_t::PAD_NONE || e.sidStoreMode != 0) {
        Fail("%s: only deqScale DEQ_NONE, padMode PAD_NONE and sidStoreMode 0 are emulated (the dequantisation "
             "modes convert int32_t results)",
             api);
    }
    if (p.blockCount < 1 || p.blockCount > 4095 || p.blockLen < 1) {
        Fail("%s: DataCopyParams.blockCount %u must be in [1, 4095] and blockLen %u at least 1", api, p.blockCount,
             p.blockLen);
    }
    if (p.srcStride != 0 || p.dstStride != 0) {
        Fail("%s: srcStride/dstStride of BLOCK_MODE_MATRIX are not emulated (no public source gives their unit): "
             "copy contiguous fractals",
             api);
    }
    constexpr uint64_t fractal = 256;  // 16 x 16 elements
    if (src.addr_ % (fractal * sizeof(U)) != 0) {
        Fail("%s: src address %u in L0C does not start a 16x16 fractal (%zu bytes): BLOCK_MODE_MATRIX moves whole "
             "fractals",
             api, src.addr_, fractal * sizeof(U));
    }
    const uint64_t n = static_cast<uint64_t>(p.blockCount) * p.blockLen * fractal;
    const U* s = Operand(api, "src", src, n, Pipe::V, false);
    T* d = Operand(api, "dst", dst, n, Pipe::V, true);
    for (uint64_t i = 0; i < n; ++i) {
        U v = s[i];
        if (e.isRelu && v < U(0)) {
            v = U(0);
        }
        d[i] = T(v);
    }
}

}  // namespace emu

// CO1 -> CO2 of the result type (float, int32_t; half from a half Mmad on 1001/2002)
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                const DataCopyParams& intriParams, const DataCopyEnhancedParams& enhancedParams)
{
    static_assert(emu::IsOneOf<T, float, int32_t, half>::value,
                  "DataCopy with DataCopyEnhancedParams is emulated for CO1 -> CO2 of float, int32_t and half");
    const char* api = "DataCopy(DataCopyEnhancedParams)";
    if (src.space_ != emu::Space::L0C) {
        emu::Fail("%s: afc emulates the CO1 -> CO2 path only (src is in %s)", api, emu::SpaceName(src.space_));
    }
    emu::CopyCo1ToCo2(api, dst, src, intriParams, enhancedParams);
}

// CO1 -> CO2 converting float to half (round to nearest even, CRMODE_F32toF16)
template <typename T, typename U,
          typename std::enable_if<std::is_same<T, half>::value && std::is_same<U, float>::value, bool>::type = true>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src,
                                const DataCopyParams& intriParams, const DataCopyEnhancedParams& enhancedParams)
{
    emu::CopyCo1ToCo2("DataCopy(DataCopyEnhancedParams)", dst, src, intriParams, enhancedParams);
}

// ------------------------------------------------------------------------------------
// CPU-twin launch helpers (ascend.md 2.13)
// ------------------------------------------------------------------------------------

inline void* GmAlloc(size_t size)
{
    void* p = nullptr;
    if (posix_memalign(&p, 512, size == 0 ? 1 : size) != 0) {
        emu::Fail("GmAlloc of %zu bytes failed", size);
    }
    std::memset(p, 0, size);
    emu::RegisterGm(p, size);
    return p;
}

inline void GmFree(void* p)
{
    emu::UnregisterGm(p);
    std::free(p);
}

// the workspace: the emulation reserves no system workspace for library APIs, so the
// user workspace is the whole GM_ADDR workspace the launch passes (ascend.md 2.4)
inline void SetSysWorkspace(GM_ADDR workspace)
{
    (void)workspace;
}

inline GM_ADDR GetUserWorkspace(GM_ADDR workspace)
{
    return workspace;
}

inline void SetKernelMode(KernelMode mode)
{
    (void)mode;
}

template <typename T>
__aicore__ inline void LoadTilingData(T* dst, const uint8_t* src)
{
    static_assert(std::is_trivially_copyable<T>::value, "tiling data is a plain struct (ascend.md 2.6)");
    if (!emu::Chip().getTilingData) {
        emu::Fail("GET_TILING_DATA is not supported on %s (ascend.md 2.6): read the tiling from GM", emu::Chip().name);
    }
    if (src == nullptr) {
        emu::Fail("GET_TILING_DATA: the tiling argument is null");
    }
    emu::CheckGm("GET_TILING_DATA", src, sizeof(T));
    std::memcpy(static_cast<void*>(dst), src, sizeof(T));
}

}  // namespace AscendC

// the core a section of a mix kernel runs on (ascend.md 2.2): `if ASCEND_IS_AIV { ... }`
#define ASCEND_IS_AIC (::AscendC::emu::State().core != ::AscendC::emu::CoreKind::AIV)
#define ASCEND_IS_AIV (::AscendC::emu::State().core != ::AscendC::emu::CoreKind::AIC)

// KERNEL_TASK_TYPE_DEFAULT records the kernel type: cube instructions in an AIV-only
// kernel (and vector ones in an AIC-only kernel) abort on split chips
#define KERNEL_TASK_TYPE_DEFAULT(type) ::AscendC::emu::SetKernelType(type)

// GET_TILING_DATA(var, tiling) declares `var` of the op's registered tiling type. An
// op project's build provides that type to the kernel; the afc harness passes it as
// AFC_TILING_DATA_TYPE (with the op's tiling header force-included).
#define GET_TILING_DATA(var, tiling) \
    AFC_TILING_DATA_TYPE var;        \
    ::AscendC::LoadTilingData(&var, (tiling))
#define GET_TILING_DATA_WITH_STRUCT(type, var, tiling) \
    type var;                                          \
    ::AscendC::LoadTilingData(&var, (tiling))

// ICPU_RUN_KF(kernel, blockDim, args...): run the blocks one after another
#define ICPU_RUN_KF(kernel, blockDim, ...) ::AscendC::emu::RunBlocks((blockDim), [&]() { kernel(__VA_ARGS__); })
#define ICPU_SET_TILING_KEY(key) ((void)(key))

#endif  // AFC_ASCENDC_EMU_KERNEL_OPERATOR_H
