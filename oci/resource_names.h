// Names in linux.resources that stand for cgroup files, judged before
// anything is made: a huge page size (hugepageLimits[].pageSize, the
// middle of hugetlb.<size>.max) and a unified key (a v2 file's name). A
// name is written into a path under the container's cgroup directory, so
// each is refused unless it can only name a file of that directory.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stockade::oci {

// Why `size` is not a huge page size of this host, as the kernel names
// its hugetlb files (mem_fmt in mm/hugetlb_cgroup.c: "64KB", "2MB", "1GB"
// — the largest unit that divides it, one digit group, no other spelling),
// or nullopt when it is one: /sys/kernel/mm/hugepages (or `sysfs_dir`)
// has hugepages-<kB>kB for it.
std::optional<std::string> hugePageSizeProblem(
    std::string_view size, const std::string& sysfs_dir = "/sys/kernel/mm/hugepages");

// Why `key` may not be a unified file, or nullopt: a controller's file,
// "<controller>.<name>" of letters, digits, '_' and '.' ("hugetlb.2MB.max"), or
// cgroup.max.depth and cgroup.max.descendants; never another cgroup.*
// file (cgroup.procs, cgroup.subtree_control, cgroup.kill... would move
// processes, change the tree or end it, not limit it).
std::optional<std::string> unifiedKeyProblem(std::string_view key);

// The controller a unified key belongs to ("memory" of "memory.high"),
// or "" for cgroup.* keys, which need none.
std::string unifiedKeyController(std::string_view key);

}  // namespace stockade::oci
