#include "runtime/child_protocol.h"

namespace stockade {

const char* describeStage(ChildStage stage) {
    switch (stage) {
        case ChildStage::WaitForGo:
            return "wait for the supervisor";
        case ChildStage::SetIds:
            return "switch to the sandbox's uid and gid";
        case ChildStage::CgroupNamespace:
            return "create the cgroup namespace";
        case ChildStage::ParentDeath:
            return "tie the sandbox's life to stockade's";
        case ChildStage::PrivateMounts:
            return "make mounts private";
        case ChildStage::OpenSources:
            return "open mount source";
        case ChildStage::BuildRoot:
            return "build the sandbox's root";
        case ChildStage::SealRoot:
            return "make the root read-only";
        case ChildStage::PivotRoot:
            return "pivot_root into the sandbox's root";
        case ChildStage::LandlockRules:
            return "add the sandbox's paths to the Landlock ruleset";
        case ChildStage::LandlockRestrict:
            return "enforce the Landlock ruleset";
        case ChildStage::Hostname:
            return "set the hostname";
        case ChildStage::Loopback:
            return "bring up lo";
        case ChildStage::Dumpable:
            return "make init non-dumpable";
        case ChildStage::WipeMemory:
            return "clear the caller's environment from init";
        case ChildStage::ForkCommand:
            return "fork the command";
        case ChildStage::NewSession:
            return "start a new session";
        case ChildStage::Stdio:
            return "set up stdin, stdout and stderr";
        case ChildStage::Workdir:
            return "change to the working directory";
        case ChildStage::Rlimits:
            return "set resource limits";
        case ChildStage::Securebits:
            return "lock securebits";
        case ChildStage::DropCapabilities:
            return "drop capabilities";
        case ChildStage::NoNewPrivs:
            return "set no_new_privs";
        case ChildStage::Seccomp:
            return "install the seccomp filter";
        case ChildStage::Exec:
            return "execute the command";
    }
    return "unknown step";
}

}  // namespace stockade
