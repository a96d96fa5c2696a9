#include "runtime/plan/worktree_links.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <unistd.h>

#include <climits>
#include <optional>
#include <vector>

#include "base/text_safety.h"
#include "base/unique_fd.h"
#include "runtime/plan/worktree_listing.h"
#include "runtime/policy/mask_patterns.h"
#include "runtime/policy/sandbox_path.h"

namespace stockade {

namespace {

// "a/b/../c" -> "a/c"; nullopt when it climbs above the top.
std::optional<std::string> lexicallyBeneath(const std::string& path) {
    std::vector<std::string> parts;
    for (const std::string& c : pathComponents(path)) {
        if (c.empty() || c == ".") continue;
        if (c == "..") {
            if (parts.empty()) return std::nullopt;
            parts.pop_back();
        } else {
            parts.push_back(c);
        }
    }
    std::string out;
    for (const std::string& c : parts) out += (out.empty() ? "" : "/") + c;
    return out;
}

// "//a/./b/../c" -> "/a/c", from the root ("/.." is "/").
std::string lexicallyAbsolute(const std::string& path) {
    std::vector<std::string> parts;
    for (const std::string& c : pathComponents(path)) {
        if (c.empty() || c == ".") continue;
        if (c == "..") {
            if (!parts.empty()) parts.pop_back();
        } else {
            parts.push_back(c);
        }
    }
    std::string out;
    for (const std::string& c : parts) out += "/" + c;
    return out.empty() ? "/" : out;
}

// `path` below `top` ("" for `top` itself), or nullopt; both normalized.
std::optional<std::string> below(const std::string& path, const std::string& top) {
    if (top.empty() || !isUnder(path, top)) return std::nullopt;
    if (path == top) return std::string();
    return path.substr(top == "/" ? 1 : top.size() + 1);
}

// A path whose end depends on the process that reads it: /proc/self, a
// pid, /proc/PID/cwd and /dev/fd/N are each reader's own.
bool readerDependent(const std::string& absolute) {
    for (const char* prefix : {"/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"})
        if (isUnder(absolute, prefix)) return true;
    return false;
}

// `raw` (a path below the worktree's top, `..` and all) resolved beneath it
// through no link: `..` as the kernel takes it, so `lnk/../x` is refused at
// `lnk`, not read as `x`. nullopt when it climbs out of the worktree.
Result<std::optional<LinkLead>> beneath(int root_fd, const std::string& raw) {
    const std::optional<std::string> lexical = lexicallyBeneath(raw);
    if (lexical && lexical->empty())
        return std::optional<LinkLead>(LinkLead{LinkLead::Kind::Inside});
    const UniqueFd fd = openBeneathWorktree(root_fd, raw, O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
    const int err = fd ? 0 : errno;
    if (fd) {
        // Through no link, `..` is what the path says: the lexical name is
        // the one reached.
        LinkLead lead{LinkLead::Kind::Inside, lexical.value_or(""), {}};
        if (!lexical || fstat(fd.get(), &lead.st) < 0)
            return Error::message("leads to /repo/" + escapeForTerminal(raw) +
                                  ", which cannot be examined");
        return std::optional<LinkLead>(std::move(lead));
    }
    if (err == EXDEV) return std::optional<LinkLead>();
    if ((err == ENOENT || err == ENOTDIR) && lexical)
        return std::optional<LinkLead>(LinkLead{LinkLead::Kind::Missing, *lexical, {}});
    if (err == ELOOP || err == ENOENT || err == ENOTDIR)
        return Error::message("leads to /repo/" + escapeForTerminal(raw) +
                              ", which is reached only through another link or a missing "
                              "directory");
    return Error::fromErrno(
        "openat2(\"/repo/" + escapeForTerminal(raw) + "\", RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)",
        err);
}

}  // namespace

std::string heldDirectoryPath(int fd) {
    char path[PATH_MAX];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(link.c_str(), path, sizeof path - 1);
    if (n <= 0 || path[0] != '/') return "";
    return std::string(path, static_cast<size_t>(n));
}

Result<std::vector<LinkLead>> linkLeadsOf(int root_fd, const std::string& host_path,
                                          const std::string& relative,
                                          const std::vector<MountedPlace>& mounted, bool hide) {
    // The link itself, through no link and beneath the worktree: a
    // directory above it swapped for a link since the walk is refused
    // (ELOOP), never a link text elsewhere read in its place.
    const UniqueFd held =
        openBeneathWorktree(root_fd, relative, O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
    char target[PATH_MAX];
    const ssize_t n = held ? readlinkat(held.get(), "", target, sizeof target - 1) : -1;
    if (n < 0) return Error::fromErrno("readlink(\"/repo/" + escapeForTerminal(relative) + "\")");
    const std::string text(target, static_cast<size_t>(n));
    if (text.empty()) return Error::message("is an empty link");
    const size_t slash = relative.rfind('/');
    const std::string from = slash == std::string::npos ? "" : relative.substr(0, slash) + "/";
    const bool absolute = text[0] == '/';
    // A path below the link's directory, as it is written: every reader
    // takes it from the same directory.
    if (!absolute) {
        auto lead = beneath(root_fd, from + text);
        if (!lead) return lead.error();
        if (*lead) return std::vector<LinkLead>{**lead};
    }
    // Out of the worktree as written: where the sandbox reads it (the
    // worktree at /repo, nothing above its root) and where the host does,
    // read lexically. That is the kernel's reading only where no `..`
    // follows a name (after a link, `..` leaves the link's target, not the
    // link's directory: `/dev/fd/../root/...` is /proc/self/root/...): such
    // a text is refused. Leading `..` of a relative text climb the real
    // directories above the link (the worktree's path has no link in it).
    bool named = false;
    for (const std::string& c : pathComponents(text)) {
        if (c.empty() || c == ".") continue;
        if (c != "..") {
            named = true;
        } else if (named || absolute) {
            return Error::message("links through `..` after a name (" + escapeForTerminal(text) +
                                  "), which the kernel takes from wherever that name leads");
        }
    }
    const std::string in_sandbox = lexicallyAbsolute(absolute ? text : "/repo/" + from + text);
    const std::string on_host =
        host_path.empty() ? "" : lexicallyAbsolute(absolute ? text : host_path + "/" + from + text);
    for (const std::string* view : {&in_sandbox, &on_host})
        if (readerDependent(*view))
            return Error::message("leads through " + escapeForTerminal(*view) +
                                  ", where it lands depends on the process that reads it");
    // A place the sandbox reaches by a --mount: what a host tool writes
    // there through a hidden link the sandbox reads, and what the sandbox
    // writes there a host reader of a read-only link reads.
    for (const MountedPlace& m : mounted) {
        if (!hide && !m.writable) continue;
        const std::pair<const std::string*, const std::string*> places[] = {
            {&in_sandbox, &m.target}, {&on_host, &m.source}};
        for (const auto& [view, place] : places)
            if (below(*view, *place))
                return Error::message("leads to " + escapeForTerminal(*view) +
                                      ", which the sandbox reaches by --mount " +
                                      escapeForTerminal(m.source) + ":" +
                                      escapeForTerminal(m.target) + (m.writable ? ":rw" : ""));
    }
    // Each reading that lands in the worktree, the sandbox's and the
    // host's (a worktree whose host path is under /repo reads as both).
    std::vector<LinkLead> leads;
    const std::string sandbox_top = "/repo";
    const std::pair<const std::string*, const std::string*> readings[] = {
        {&in_sandbox, &sandbox_top}, {&on_host, &host_path}};
    for (const auto& [view, top] : readings) {
        const std::optional<std::string> rel = below(*view, *top);
        if (!rel) continue;
        auto lead = beneath(root_fd, *rel);
        if (!lead) return lead.error();
        if (*lead) leads.push_back(std::move(**lead));
    }
    return leads;
}

}  // namespace stockade
