// The stockade profile's pure parts (oci/profile.h): which containers get
// it, what refuses it, and how the spec's filter and stockade's default are
// laid end to end; which filters' refusals the monitor counts.
// lifecycle.py and denials.py show the kernel's answers.
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "oci/config.h"
#include "oci/container_plan.h"
#include "oci/profile.h"
#include "seccomp/filter.h"

using namespace stockade::oci;
using stockade::seccomp::chainPrograms;

namespace {

sock_filter ret(uint32_t k) {
    return sock_filter{BPF_RET | BPF_K, 0, 0, k};
}

}  // namespace

TEST_CASE("oci profile: the spec's allowances jump to stockade's filter, its refusals stand",
          "[oci]") {
    // first: nr == 1 ? ERRNO(EDQUOT) : ALLOW (with a LOG in between)
    std::vector<sock_filter> first = {
        {BPF_LD | BPF_W | BPF_ABS, 0, 0, 0},
        {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 1},
        ret(SECCOMP_RET_ERRNO | 122),
        {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 2},
        ret(SECCOMP_RET_LOG),
        ret(SECCOMP_RET_ALLOW),
    };
    std::vector<sock_filter> second = {ret(SECCOMP_RET_ERRNO | 1)};
    auto chained = chainPrograms(first, second);
    REQUIRE(chained);
    REQUIRE(chained->size() == first.size() + second.size());
    CHECK((*chained)[2].code == (BPF_RET | BPF_K));
    CHECK((*chained)[2].k == (SECCOMP_RET_ERRNO | 122));
    // Each allowance now jumps to index 6, where `second` starts.
    CHECK((*chained)[4].code == (BPF_JMP | BPF_JA));
    CHECK(4 + 1 + (*chained)[4].k == 6);
    CHECK((*chained)[5].code == (BPF_JMP | BPF_JA));
    CHECK(5 + 1 + (*chained)[5].k == 6);
    CHECK((*chained)[6].k == (SECCOMP_RET_ERRNO | 1));
    // Either alone is itself.
    auto alone = chainPrograms({}, second);
    REQUIRE(alone);
    CHECK((alone->size() == 1 && (*alone)[0].k == second[0].k));
    CHECK(chainPrograms(first, {})->size() == first.size());
}

TEST_CASE("oci profile: a computed answer or a program past BPF_MAXINSNS is refused", "[oci]") {
    std::vector<sock_filter> computed = {{BPF_RET | BPF_A, 0, 0, 0}};
    CHECK_FALSE(chainPrograms(computed, {ret(SECCOMP_RET_ALLOW)}));
    std::vector<sock_filter> big(BPF_MAXINSNS, ret(SECCOMP_RET_ALLOW));
    auto refused = chainPrograms(big, {ret(SECCOMP_RET_ALLOW)});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().describe().find("4096") != std::string::npos);
}

TEST_CASE("oci profile: only the annotation or the runtime's default asks for it", "[oci]") {
    Config config;
    CHECK(*containerProfile(config, "") == "");
    CHECK(*containerProfile(config, "default") == "default");
    config.annotations[kProfileAnnotation] = "default";
    CHECK(*containerProfile(config, "") == "default");
    config.annotations[kProfileAnnotation] = "none";
    auto lifted = containerProfile(config, "default");
    REQUIRE_FALSE(lifted);
    CHECK(lifted.error().describe().find(kProfileAnnotation) != std::string::npos);
}

TEST_CASE("oci profile: a spec asking for capabilities under it is refused, naming them", "[oci]") {
    Config config;
    config.capabilities.bounding = uint64_t{1} << 5;  // CAP_KILL
    CHECK(*containerProfile(config, "") == "");
    auto refused = containerProfile(config, "default");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().describe().find("CAP_KILL") != std::string::npos);
    CHECK(refused.error().describe().find("process.capabilities") != std::string::npos);
}

TEST_CASE("oci profile: --default-profile takes default or none", "[oci]") {
    CHECK(*runtimeDefaultProfile("default") == "default");
    CHECK(*runtimeDefaultProfile("none") == "");
    CHECK_FALSE(runtimeDefaultProfile("strict"));
}

TEST_CASE("oci profile: which filters' refusals the monitor counts, and why not the others",
          "[oci]") {
    using stockade::ChildPlan;
    using stockade::seccomp::Action;
    Config config;
    ChildPlan plan;
    // No filter: nothing to count, nothing said.
    auto none = planDenials(config, "", false, plan);
    REQUIRE(none);
    CHECK(plan.seccomp_notified_program.empty());
    CHECK(none->not_counted.empty());
    // stockade's default alone: its notified program, answered by the
    // default policy (no source).
    auto defaults = planDenials(config, "default", false, plan);
    REQUIRE(defaults);
    CHECK_FALSE(plan.seccomp_notified_program.empty());
    CHECK(defaults->source == nullptr);
    // The spec's filter alone: answered from the spec's policy.
    stockade::seccomp::SeccompPolicy spec;
    spec.default_action = Action::Allow;
    spec.rules.push_back({{"keyctl"}, Action::Errno, 18, {}});
    config.seccomp = spec;
    auto own = planDenials(config, "", false, plan);
    REQUIRE(own);
    CHECK_FALSE(plan.seccomp_notified_program.empty());
    REQUIRE(own->source != nullptr);
    CHECK(own->not_counted.empty());
    // Chained: the kernel's, saying why.
    auto chained = planDenials(config, "default", false, plan);
    REQUIRE(chained);
    CHECK(plan.seccomp_notified_program.empty());
    CHECK(chained->not_counted.find("chained") != std::string::npos);
    // A spec refusing the command's own hand-over (sendmsg) would block it
    // for good: not counted, naming the call.
    config.seccomp->rules.push_back({{"sendmsg"}, Action::Errno, 1, {}});
    auto blocked = planDenials(config, "", false, plan);
    REQUIRE(blocked);
    CHECK(plan.seccomp_notified_program.empty());
    CHECK(blocked->not_counted.find("sendmsg") != std::string::npos);
}
