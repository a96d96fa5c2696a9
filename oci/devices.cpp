#include "oci/devices.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <memory>
#include <optional>

namespace stockade::oci {

namespace {

bool isNode(const struct stat& st, const Device& d) {
    const bool type_matches = d.type == 'b' ? S_ISBLK(st.st_mode) : S_ISCHR(st.st_mode);
    return type_matches && st.st_rdev == makedev(d.major, d.minor);
}

// lstat: a symlink is never taken for the node it names.
std::optional<struct stat> nodeAt(const std::string& path, const Device& d) {
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && isNode(st, d)) return st;
    return std::nullopt;
}

struct DirCloser {
    void operator()(DIR* dir) const { closedir(dir); }
};

// /dev and one level below it (/dev/net/tun, /dev/dri/card0), without
// following a link; devpts, shm and mqueue hold no device nodes.
std::optional<std::string> findInDev(const Device& d, const std::string& dir, int depth) {
    std::unique_ptr<DIR, DirCloser> listing(opendir(dir.c_str()));
    if (!listing) return std::nullopt;
    std::vector<std::string> subdirs;
    while (dirent* e = readdir(listing.get())) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        const std::string path = dir + "/" + name;
        if (e->d_type == DT_DIR) {
            if (depth > 0 && name != "pts" && name != "shm" && name != "mqueue")
                subdirs.push_back(path);
            continue;
        }
        if (e->d_type != DT_CHR && e->d_type != DT_BLK && e->d_type != DT_UNKNOWN) continue;
        if (nodeAt(path, d)) return path;
    }
    for (const std::string& sub : subdirs)
        if (auto found = findInDev(d, sub, depth - 1)) return found;
    return std::nullopt;
}

std::string numbers(const Device& d) {
    return std::string(d.type == 'b' ? "block" : "character") + " device " +
           std::to_string(d.major) + ":" + std::to_string(d.minor);
}

std::string octal(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

}  // namespace

std::string deviceAccess(const Device& device, const std::vector<DeviceRule>& rules) {
    bool r = true, w = true, m = true;
    for (const DeviceRule& rule : rules) {
        const bool matches = (rule.type == 'a' || rule.type == device.type) &&
                             (!rule.major || *rule.major < 0 || *rule.major == device.major) &&
                             (!rule.minor || *rule.minor < 0 || *rule.minor == device.minor);
        if (!matches) continue;
        for (char c : rule.access) {
            if (c == 'r') r = rule.allow;
            if (c == 'w') w = rule.allow;
            if (c == 'm') m = rule.allow;
        }
    }
    return std::string(r ? "r" : "") + (w ? "w" : "") + (m ? "m" : "");
}

Result<DevicePlan> planDevices(const std::vector<Device>& devices,
                               const std::vector<DeviceRule>& rules, bool own_dev,
                               bool rules_held) {
    DevicePlan out;
    for (size_t i = 0; i < devices.size(); ++i) {
        const Device& d = devices[i];
        const std::string field = "config.json: linux.devices[" + std::to_string(i) + "]";
        static const char* const kMadeByStockade[] = {"/dev/null",   "/dev/zero",    "/dev/full",
                                                      "/dev/random", "/dev/urandom", "/dev/tty",
                                                      "/dev/ptmx"};
        bool made = false;
        if (own_dev)
            for (const char* own : kMadeByStockade) made = made || d.path == own;
        if (made) {
            if (nodeAt(d.path, d)) continue;  // the same node: it is there already
            return Error::message(field + ": " + d.path + " is made by stockade as the host's (" +
                                  numbers(d) + " is not it)");
        }
        const std::string access = deviceAccess(d, rules);
        if (!rules_held &&
            (access.find('r') == std::string::npos || access.find('w') == std::string::npos))
            return Error::message(
                field + ": linux.resources.devices gives " + d.path + " \"" + access +
                "\" only, which stockade cannot hold to here (the container has no device "
                "cgroup of its own holding the rules, as rootless; a bind opens as the node's "
                "mode allows): grant rw or leave the device out");
        std::optional<std::string> host;
        if (nodeAt(d.path, d))
            host = d.path;
        else
            host = findInDev(d, "/dev", 1);
        if (!host)
            return Error::message(field + ": the host has no " + numbers(d) +
                                  " in /dev (stockade binds the host's node: it makes none in "
                                  "the container's user namespace)");
        // Held without following a link anywhere on its path, and judged
        // again through the fd: the node looked at and the node bound are one.
        auto held = holdHostPath(field, *host, false);
        if (!held) return held.error();
        if (!isNode(held->st, d))
            return Error::message(field + ": " + *host + " changed while it was looked at");
        const struct stat& st = held->st;
        if (d.file_mode && (*d.file_mode & 07777) != (st.st_mode & 07777))
            out.notes.push_back(field + ": " + d.path + " keeps the host node's mode " +
                                octal(st.st_mode) + " (a bind of " + *host + "; fileMode " +
                                octal(*d.file_mode) + " cannot be set in a user namespace)");
        if ((d.uid && *d.uid != 0) || (d.gid && *d.gid != 0))
            out.notes.push_back(field + ": " + d.path + " keeps the host node's owner (a bind of " +
                                *host + "; uid and gid cannot be set in a user namespace)");
        out.binds.push_back({std::move(*held), d.path});
    }
    return out;
}

}  // namespace stockade::oci
