/*
 * afc_emu_launch.h: run an emulated kernel launch in a child process (POSIX).
 *
 * Like CANN's CPU twin (ascend.md 2.13), a launch forks: GM buffers live in shared
 * mappings (as GmAlloc's are), the child runs the blocks one after another (a mix
 * kernel's block as its AIC and AIVs, interleaved at their cross-core flags) and exits,
 * and the parent copies GM back. An assertion of the emulation, a crash or a timeout
 * in the kernel ends the child only; the parent returns a one-line message. This is
 * what afc's generated harness calls from Python through ctypes.
 */
#ifndef AFC_ASCENDC_EMU_LAUNCH_H
#define AFC_ASCENDC_EMU_LAUNCH_H

#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel_operator.h"

namespace AscendC {
namespace emu {

// the kernel entry, called once per block with the shared GM buffers, the workspace and
// the tiling blob
using KernelThunk = void (*)(uint8_t* const* gm, uint8_t* workspace, uint8_t* tiling);

struct LaunchReport {
    char message[2048];
};

inline LaunchReport*& ChildReport()
{
    static LaunchReport* report = nullptr;
    return report;
}

inline void ReportAndExit(const char* message)
{
    std::snprintf(ChildReport()->message, sizeof(ChildReport()->message), "%s", message);
    _exit(86);
}

inline void* SharedMap(size_t bytes)
{
    void* p = mmap(nullptr, bytes == 0 ? 1 : bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

// Returns 0 on success, else writes one line into `error` and returns non-zero.
// `together`: the kernel calls SyncAll, so all its blocks run side by side.
inline int LaunchForked(const ChipConfig& chip, int64_t blocks, int mixAivs, int64_t numGm, void* const* gm,
                        const int64_t* gmBytes, size_t workspaceBytes, const void* tiling, size_t tilingBytes,
                        KernelThunk thunk, unsigned timeoutSeconds, char* error, size_t errorLen,
                        bool together = false)
{
    if (blocks < 1 || blocks > 65535) {
        std::snprintf(error, errorLen, "kernel launched on %lld blocks: numBlocks must be in [1, 65535]",
                      static_cast<long long>(blocks));
        return 2;
    }
    std::vector<uint8_t*> shared(static_cast<size_t>(numGm), nullptr);
    auto release = [&]() {
        for (int64_t i = 0; i < numGm; ++i) {
            if (shared[static_cast<size_t>(i)] != nullptr) {
                munmap(shared[static_cast<size_t>(i)], gmBytes[i] == 0 ? 1 : static_cast<size_t>(gmBytes[i]));
            }
        }
    };
    for (int64_t i = 0; i < numGm; ++i) {
        auto* p = static_cast<uint8_t*>(SharedMap(static_cast<size_t>(gmBytes[i])));
        if (p == nullptr) {
            release();
            std::snprintf(error, errorLen, "cannot map %lld bytes of GM", static_cast<long long>(gmBytes[i]));
            return 3;
        }
        std::memcpy(p, gm[i], static_cast<size_t>(gmBytes[i]));
        shared[static_cast<size_t>(i)] = p;
    }
    auto* tilingCopy = static_cast<uint8_t*>(SharedMap(tilingBytes));
    auto* report = static_cast<LaunchReport*>(SharedMap(sizeof(LaunchReport)));
    // the workspace starts poisoned (0xFF: NaN in float types), as GM nobody wrote
    auto* workspace = workspaceBytes ? static_cast<uint8_t*>(SharedMap(workspaceBytes)) : nullptr;
    if (tilingCopy == nullptr || report == nullptr || (workspaceBytes && workspace == nullptr)) {
        release();
        std::snprintf(error, errorLen, "cannot map the tiling data or the workspace");
        return 3;
    }
    if (workspace != nullptr) {
        std::memset(workspace, 0xFF, workspaceBytes);
    }
    std::memcpy(tilingCopy, tiling, tilingBytes);
    report->message[0] = '\0';
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child == 0) {
        ChildReport() = report;
        OnFailure() = ReportAndExit;
        SetChipConfig(chip);
        GmRegions().clear();
        for (int64_t i = 0; i < numGm; ++i) {
            RegisterGm(shared[static_cast<size_t>(i)], static_cast<size_t>(gmBytes[i]));
        }
        RegisterGm(tilingCopy, tilingBytes);
        if (workspace != nullptr) {
            RegisterGm(workspace, workspaceBytes, true);
        }
        LaunchWorkspaceBytes() = workspaceBytes;
        if (timeoutSeconds > 0) {
            alarm(timeoutSeconds);
        }
        RunBlocks(blocks, [&]() { thunk(shared.data(), workspace, tilingCopy); }, mixAivs, together);
        _exit(0);
    }
    int status = 0;
    int rc = 0;
    if (child < 0) {
        std::snprintf(error, errorLen, "cannot fork the emulated kernel");
        rc = 4;
    } else if (waitpid(child, &status, 0) < 0) {
        std::snprintf(error, errorLen, "lost the emulated kernel process");
        rc = 4;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        for (int64_t i = 0; i < numGm; ++i) {
            std::memcpy(gm[i], shared[static_cast<size_t>(i)], static_cast<size_t>(gmBytes[i]));
        }
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 86) {
        std::snprintf(error, errorLen, "%s", report->message);
        rc = 1;
    } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
        std::snprintf(error, errorLen, "the kernel did not finish within %u s", timeoutSeconds);
        rc = 5;
    } else if (WIFSIGNALED(status)) {
        std::snprintf(error, errorLen, "the kernel crashed (%s)", strsignal(WTERMSIG(status)));
        rc = 6;
    } else {
        std::snprintf(error, errorLen, "the kernel exited with status %d", WEXITSTATUS(status));
        rc = 7;
    }
    release();
    munmap(tilingCopy, tilingBytes == 0 ? 1 : tilingBytes);
    if (workspace != nullptr) {
        munmap(workspace, workspaceBytes);
    }
    munmap(report, sizeof(LaunchReport));
    return rc;
}

}  // namespace emu
}  // namespace AscendC

#endif  // AFC_ASCENDC_EMU_LAUNCH_H
