// runtime/child/child_setup.h: the one table of the child's setup steps. What run,
// check and bench execute is this table walked by one runner; these cases
// hold the table to its promises (every stage once, in ChildStage's order,
// each process's steps together, bench levels that only add), and repeat as
// tests the orderings child_in_child.cpp asserts at compile time, so that a
// change that drops a static_assert still meets them here.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "runtime/child/child_protocol.h"
#include "runtime/child/child_setup.h"

using namespace stockade;

namespace {

std::vector<SetupStepInfo> table() {
    size_t count = 0;
    const SetupStepInfo* steps = setupSteps(&count);
    return {steps, steps + count};
}

size_t indexOf(ChildStage stage) {
    const auto steps = table();
    for (size_t i = 0; i < steps.size(); ++i)
        if (steps[i].stage == stage) return i;
    FAIL("stage " << describeStage(stage) << " is not in the table");
    return steps.size();
}

std::vector<ChildStage> stagesIn(SetupMode mode, BenchLevel level) {
    std::vector<ChildStage> out;
    for (const SetupStepInfo& step : table())
        if (stepRunsIn(step, mode, level)) out.push_back(step.stage);
    return out;
}

}  // namespace

TEST_CASE("child setup: the table lists every stage once, in ChildStage's order", "[setup]") {
    const auto steps = table();
    // Securebits is DropCapabilities's first call named apart, not a step.
    REQUIRE(steps.size() == static_cast<size_t>(kChildStageCount) - 1);
    std::set<std::string> words;
    for (size_t i = 0; i < steps.size(); ++i) {
        INFO(describeStage(steps[i].stage));
        CHECK(static_cast<size_t>(steps[i].stage) == i);
        CHECK(steps[i].reason != nullptr);
        CHECK(std::string(steps[i].reason).size() > 10);
        CHECK(steps[i].level != BenchLevel::FullProfile);
        // check and the debug log name steps by these words: each its own.
        CHECK(std::string(describeStage(steps[i].stage)) != "unknown step");
        CHECK(words.insert(describeStage(steps[i].stage)).second);
        if (i > 0) CHECK(steps[i].process >= steps[i - 1].process);
    }
    CHECK(std::string(describeStage(ChildStage::Securebits)) != "unknown step");
}

TEST_CASE("child setup: run and check take every step, in the table's order", "[setup]") {
    std::vector<ChildStage> all;
    for (const SetupStepInfo& step : table()) all.push_back(step.stage);
    CHECK(stagesIn(SetupMode::Run, BenchLevel::Bare) == all);
    CHECK(stagesIn(SetupMode::Check, BenchLevel::Bare) == all);
    // A bench at its last in-process level builds what run builds.
    CHECK(stagesIn(SetupMode::Bench, BenchLevel::CgroupLimits) == all);
}

TEST_CASE("child setup: each bench level adds steps to the one below", "[setup]") {
    // Bare is clone + execve and nothing else.
    CHECK(stagesIn(SetupMode::Bench, BenchLevel::Bare) ==
          std::vector<ChildStage>{ChildStage::Exec});
    std::vector<ChildStage> below = stagesIn(SetupMode::Bench, BenchLevel::Bare);
    for (int l = 1; l <= static_cast<int>(BenchLevel::CgroupLimits); ++l) {
        const auto level = static_cast<BenchLevel>(l);
        INFO("bench level " << l);
        const std::vector<ChildStage> here = stagesIn(SetupMode::Bench, level);
        // (That the lower level's steps are all still there follows from
        // stepRunsIn's threshold; that each level adds one can fail.)
        CHECK(here.size() > below.size());
        below = here;
    }
    // A level never runs a step without the step it needs: what can break
    // when a step's level is edited.
    auto levelOf = [](ChildStage stage) {
        for (const SetupStepInfo& step : table())
            if (step.stage == stage) return static_cast<int>(step.level);
        return -1;
    };
    CHECK(levelOf(ChildStage::LandlockRestrict) >= levelOf(ChildStage::NoNewPrivs));
    CHECK(levelOf(ChildStage::LandlockRestrict) >= levelOf(ChildStage::LandlockRules));
    CHECK(levelOf(ChildStage::PivotRoot) >= levelOf(ChildStage::BuildRoot));
    CHECK(levelOf(ChildStage::Loopback) == levelOf(ChildStage::StartNetworkHelper));
    // init exists from the PID namespace on, and so does everything it does.
    for (const SetupStepInfo& step : table())
        if (step.process == StepProcess::InitAfterCommand)
            CHECK(static_cast<int>(step.level) >= static_cast<int>(BenchLevel::PidNs));
}

TEST_CASE("child setup: the orderings security depends on", "[setup]") {
    using S = ChildStage;
    // seccomp(2) SECCOMP_SET_MODE_FILTER: EACCES without no_new_privs or
    // CAP_SYS_ADMIN; landlock_restrict_self(2): EPERM likewise.
    CHECK(indexOf(S::NoNewPrivs) < indexOf(S::LandlockRestrict));
    CHECK(indexOf(S::LandlockRestrict) < indexOf(S::Seccomp));
    CHECK(indexOf(S::DropCapabilities) < indexOf(S::NoNewPrivs));
    // seccomp is the command's last step before execve, but for an OCI
    // container's startContainer hooks, which run under it.
    CHECK(indexOf(S::Seccomp) + 1 == indexOf(S::StartContainerHooks));
    CHECK(indexOf(S::StartContainerHooks) + 1 == indexOf(S::Exec));
    CHECK(table()[indexOf(S::StartContainerHooks)].process == StepProcess::Command);
    // createContainer hooks: the root built, the host's tree still there.
    CHECK(indexOf(S::BuildRoot) + 1 == indexOf(S::CreateContainerHooks));
    CHECK(indexOf(S::CreateContainerHooks) + 1 == indexOf(S::SealRoot));
    CHECK(indexOf(S::SealRoot) < indexOf(S::PivotRoot));
    CHECK(table()[indexOf(S::Exec)].process == StepProcess::Command);
    // /proc is mounted in the new root before the old one goes.
    CHECK(indexOf(S::BuildRoot) < indexOf(S::PivotRoot));
    // prctl(2): a change of credentials clears the parent-death signal.
    CHECK(indexOf(S::SetIds) < indexOf(S::ParentDeath));
    CHECK(indexOf(S::WaitForGo) < indexOf(S::SetIds));
    // Fds closed late (GHSA-xr7r-f8xq-vfvv): after the last host fd is
    // used, before the command exists and chooses its working directory.
    CHECK(indexOf(S::BuildRoot) < indexOf(S::CloseFds));
    CHECK(indexOf(S::Loopback) < indexOf(S::CloseFds));
    CHECK(indexOf(S::CloseFds) < indexOf(S::ForkCommand));
    CHECK(indexOf(S::Stdio) < indexOf(S::CloseOnExec));
    CHECK(indexOf(S::Workdir) < indexOf(S::CloseOnExec));
    // Nothing of the command runs outside its cgroups or before init is
    // non-dumpable and wiped.
    CHECK(indexOf(S::JoinCgroups) < indexOf(S::CgroupNamespace));
    CHECK(indexOf(S::CgroupNamespace) < indexOf(S::ForkCommand));
    CHECK(indexOf(S::Dumpable) < indexOf(S::ForkCommand));
    CHECK(indexOf(S::WipeMemory) < indexOf(S::ForkCommand));
}
