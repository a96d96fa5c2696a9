// Which image roots' procs a command that is PID 1 of its own pid namespace
// can mount again (namespaces/mount_plan.h procRemountable): only where
// nothing at or beneath a proc but sysctls, masks and read-only paths lies,
// since anything else could not be made again once the sources are closed.
#include <sys/mount.h>

#include <linux/mount.h>

#include <catch2/catch.hpp>

#include "namespaces/mount_plan.h"

using stockade::ns::MountKind;
using stockade::ns::MountOp;
using stockade::ns::MountPlan;

namespace {

MountOp inRoot(MountKind kind, const char* target, const char* fstype = "") {
    return {.kind = kind, .target = target, .fstype = fstype, .resolve_in_root = true};
}

MountPlan podmanLike() {
    MountPlan plan;
    plan.staging = "/tmp/staging";
    stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, "proc", "proc"));
    stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, "dev", "tmpfs"));
    stockade::ns::addOp(plan, inRoot(MountKind::BindFromHost, "dev/null"));
    stockade::ns::addOp(plan, inRoot(MountKind::File, "proc/sys/kernel/shmmax"));
    stockade::ns::addOp(plan, inRoot(MountKind::MaskWithTmpfs, "proc/kcore"));
    stockade::ns::addOp(plan, inRoot(MountKind::MaskWithTmpfs, "proc/acpi"));
    stockade::ns::addOp(plan, inRoot(MountKind::ReadOnlyInPlace, "proc/sys"));
    stockade::ns::addOp(plan, inRoot(MountKind::MaskWithTmpfs, "sys/firmware"));
    return plan;
}

}  // namespace

TEST_CASE("proc remount: a spec's masks, read-only paths and sysctls can be made again",
          "[proc_remount]") {
    MountPlan plan = podmanLike();
    CHECK(stockade::ns::procRemountable(plan));
    CHECK_FALSE(stockade::ns::underProcTarget(plan, 0));  // the proc itself
    CHECK_FALSE(stockade::ns::underProcTarget(plan, 2));  // dev/null
    CHECK(stockade::ns::underProcTarget(plan, 3));
    CHECK(stockade::ns::underProcTarget(plan, 4));
    CHECK(stockade::ns::underProcTarget(plan, 6));
    CHECK_FALSE(stockade::ns::underProcTarget(plan, 7));  // sys/firmware
}

TEST_CASE("proc remount: a name that only begins like the proc's target is not beneath it",
          "[proc_remount]") {
    MountPlan plan = podmanLike();
    stockade::ns::addOp(plan, inRoot(MountKind::BindFromHost, "process"));
    stockade::ns::addOp(plan, inRoot(MountKind::BindFromHost, "proc2/x"));
    CHECK_FALSE(stockade::ns::underProcTarget(plan, plan.ops.size() - 1));
    CHECK_FALSE(stockade::ns::underProcTarget(plan, plan.ops.size() - 2));
    CHECK(stockade::ns::procRemountable(plan));
}

TEST_CASE("proc remount: a host bind or another mount at or beneath a proc cannot be made again",
          "[proc_remount]") {
    SECTION("lxcfs's bind over /proc/meminfo") {
        MountPlan plan = podmanLike();
        stockade::ns::addOp(plan, inRoot(MountKind::BindFromHost, "proc/meminfo"));
        CHECK_FALSE(stockade::ns::procRemountable(plan));
    }
    SECTION("a tmpfs over /proc itself") {
        MountPlan plan = podmanLike();
        stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, "proc", "tmpfs"));
        CHECK_FALSE(stockade::ns::procRemountable(plan));
    }
    SECTION("a prepared mount beneath it") {
        MountPlan plan = podmanLike();
        stockade::ns::addOp(plan, inRoot(MountKind::AttachPrepared, "proc/x"));
        CHECK_FALSE(stockade::ns::procRemountable(plan));
    }
    SECTION("a run's proc, not an image root's") {
        MountPlan plan;
        plan.staging = "/tmp/staging";
        stockade::ns::addOp(plan,
                            {.kind = MountKind::Filesystem, .target = "proc", .fstype = "proc"});
        CHECK_FALSE(stockade::ns::procRemountable(plan));
    }
}

TEST_CASE("proc remount: a root with no proc, or the ops before it, are no obstacle",
          "[proc_remount]") {
    MountPlan plan;
    plan.staging = "/tmp/staging";
    stockade::ns::addOp(plan, inRoot(MountKind::BindFromHost, "proc/early"));
    stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, "dev", "tmpfs"));
    CHECK(stockade::ns::procRemountable(plan));
    stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, "proc", "proc"));
    stockade::ns::addOp(plan, inRoot(MountKind::MaskWithNull, "proc/keys"));
    CHECK(stockade::ns::procRemountable(plan));
}

TEST_CASE("proc remount: a target spelled another way is not trusted to be judged by its prefix",
          "[proc_remount]") {
    for (const char* odd :
         {"./proc/kcore", "proc/./kcore", "proc//kcore", "proc/kcore/", "proc/../proc/kcore"}) {
        MountPlan plan = podmanLike();
        stockade::ns::addOp(plan, inRoot(MountKind::MaskWithTmpfs, odd));
        CHECK_FALSE(stockade::ns::procRemountable(plan));
    }
    for (const char* odd : {"proc/", "./proc", "proc/."}) {
        MountPlan plan;
        plan.staging = "/tmp/staging";
        stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, odd, "proc"));
        stockade::ns::addOp(plan, inRoot(MountKind::MaskWithTmpfs, "proc/kcore"));
        CHECK_FALSE(stockade::ns::procRemountable(plan));
    }
}

TEST_CASE("proc remount: a later mount over a directory above a proc covers it", "[proc_remount]") {
    MountPlan plan;
    plan.staging = "/tmp/staging";
    stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, "a/proc", "proc"));
    stockade::ns::addOp(plan, inRoot(MountKind::Directory, "a"));
    CHECK(stockade::ns::procRemountable(plan));
    stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, "a", "tmpfs"));
    CHECK_FALSE(stockade::ns::procRemountable(plan));
}

TEST_CASE("proc remount: a mount at the proc's own target keeps the command PID 2",
          "[proc_remount]") {
    MountPlan plan = podmanLike();
    stockade::ns::addOp(plan, inRoot(MountKind::ReadOnlyInPlace, "proc"));
    CHECK_FALSE(stockade::ns::procRemountable(plan));
}

TEST_CASE("proc remount: one atime mode, strictatime winning as mount(2) takes both",
          "[proc_remount]") {
    using stockade::ns::mountAttrsOfFlags;
    CHECK(mountAttrsOfFlags(MS_NOATIME | MS_STRICTATIME) == MOUNT_ATTR_STRICTATIME);
    CHECK(mountAttrsOfFlags(MS_NOATIME) == MOUNT_ATTR_NOATIME);
    CHECK(mountAttrsOfFlags(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NODIRATIME) ==
          (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
           MOUNT_ATTR_NODIRATIME));
    CHECK(mountAttrsOfFlags(0) == 0);
}

TEST_CASE("proc remount: more procs than are made again keep the command PID 2", "[proc_remount]") {
    MountPlan plan;
    plan.staging = "/tmp/staging";
    const char* targets[] = {"p1", "p2", "p3", "p4", "p5"};
    for (size_t i = 0; i < stockade::ns::kMaxRemountedProcs; ++i)
        stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, targets[i], "proc"));
    CHECK(stockade::ns::procRemountable(plan));
    stockade::ns::addOp(plan, inRoot(MountKind::Filesystem, "p5", "proc"));
    CHECK_FALSE(stockade::ns::procRemountable(plan));
}
