#include "oci/resource_names.h"

#include <sys/stat.h>

#include <charconv>
#include <cstdint>

namespace stockade::oci {

std::optional<std::string> hugePageSizeProblem(std::string_view size,
                                               const std::string& sysfs_dir) {
    const std::string quoted = "\"" + std::string(size) + "\"";
    uint64_t number = 0;
    const char* end = size.data() + size.size();
    auto [at, ec] = std::from_chars(size.data(), end, number);
    const std::string_view unit(at, end - at);
    uint64_t kb = 0;
    // No page is 2^32 of any unit: a bound that keeps the shifts exact.
    if (ec == std::errc() && number > 0 && number < (uint64_t{1} << 32) && size[0] != '0') {
        if (unit == "KB") kb = number;
        if (unit == "MB") kb = number << 10;
        if (unit == "GB") kb = number << 20;
    }
    if (kb == 0)
        return quoted + " is not a huge page size (a number and KB, MB or GB: \"2MB\", \"1GB\")";
    // The kernel's own spelling: the largest unit the size is a whole number of.
    const std::string canonical = kb % (1u << 20) == 0   ? std::to_string(kb >> 20) + "GB"
                                  : kb % (1u << 10) == 0 ? std::to_string(kb >> 10) + "MB"
                                                         : std::to_string(kb) + "KB";
    if (canonical != size)
        return quoted + " is spelt " + canonical + " in the kernel's hugetlb files";
    struct stat st {};
    const std::string dir = sysfs_dir + "/hugepages-" + std::to_string(kb) + "kB";
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        return quoted + " is not a huge page size this host has (no " + dir + ")";
    return std::nullopt;
}

std::optional<std::string> unifiedKeyProblem(std::string_view key) {
    const std::string quoted = "\"" + std::string(key) + "\"";
    const size_t dot = key.find('.');
    if (key.empty() || dot == 0 || dot == std::string_view::npos || dot + 1 == key.size())
        return quoted + " is not a cgroup v2 file name (<controller>.<name>)";
    for (char c : key)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.'))
            return quoted + " is not a cgroup v2 file name (letters, digits, '_', '.')";
    if (key.find("..") != std::string_view::npos || key.back() == '.')
        return quoted + " is not a cgroup v2 file name (<controller>.<name>)";
    if (key.substr(0, dot) == "cgroup" && key != "cgroup.max.depth" &&
        key != "cgroup.max.descendants")
        return quoted +
               ": of the cgroup.* files only cgroup.max.depth and cgroup.max.descendants may be "
               "set (the others move processes, change the tree or end it)";
    return std::nullopt;
}

std::string unifiedKeyController(std::string_view key) {
    const std::string_view controller = key.substr(0, key.find('.'));
    return controller == "cgroup" ? std::string() : std::string(controller);
}

}  // namespace stockade::oci
