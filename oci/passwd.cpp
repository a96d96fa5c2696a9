#include "oci/passwd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/openat2.h>

#include <algorithm>
#include <charconv>

#include "base/unique_fd.h"
#include "namespaces/syscalls.h"

namespace stockade::oci {

namespace {

bool smallRegular(int fd) {
    struct stat st {};
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
           static_cast<uint64_t>(st.st_size) <= kMaxPasswdBytes;
}

// The whole of an opened file, when it is a regular file small enough
// (checked again as it is read: it may grow); "" otherwise.
std::string readRegular(int fd) {
    UniqueFd file(fd);
    if (!file || !smallRegular(file.get())) return "";
    std::string text;
    char buf[16384];
    for (;;) {
        const ssize_t n = read(file.get(), buf, sizeof buf);
        if (n < 0) return "";  // EAGAIN too: a regular file never says it
        if (n == 0) break;
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > kMaxPasswdBytes) return "";
    }
    return text;
}

// The fields of the first entry of `passwd` whose uid is `uid`
// (name:password:uid:gid:gecos:home:shell); false when there is none.
bool entryOfUid(std::string_view passwd, uid_t uid, std::string_view (&fields)[7]) {
    while (!passwd.empty()) {
        const size_t end = passwd.find('\n');
        std::string_view line = passwd.substr(0, end);
        passwd = end == std::string_view::npos ? std::string_view() : passwd.substr(end + 1);
        size_t count = 0;
        while (count < 7) {
            const size_t colon = line.find(':');
            fields[count++] = line.substr(0, colon);
            if (colon == std::string_view::npos) break;
            line = line.substr(colon + 1);
        }
        if (count < 6 || fields[0].empty() || fields[0][0] == '#') continue;
        uint64_t value = 0;
        const char* first = fields[2].data();
        const char* last = first + fields[2].size();
        auto [ptr, ec] = std::from_chars(first, last, value);
        if (ec != std::errc() || ptr != last || fields[2].empty() || value != uid) continue;
        return true;
    }
    return false;
}

}  // namespace

std::string homeOfUid(std::string_view passwd, uid_t uid) {
    std::string_view fields[7];
    if (!entryOfUid(passwd, uid, fields)) return "/";
    const std::string_view home = fields[5];
    return home.empty() || home[0] != '/' ? "/" : std::string(home);
}

std::string nameOfUid(std::string_view passwd, uid_t uid) {
    std::string_view fields[7];
    if (!entryOfUid(passwd, uid, fields)) return "#" + std::to_string(uid);
    return std::string(fields[0]);
}

std::string readImagePasswd(int root_fd) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    UniqueFd held(ns::sysOpenat2(root_fd, "etc/passwd", &how));
    // Reopened through /proc/self/fd only once fstat said what it is: the
    // host's runtime never opens a FIFO or a device of the image to read.
    if (!held || !smallRegular(held.get())) return "";
    const std::string proc = "/proc/self/fd/" + std::to_string(held.get());
    return readRegular(open(proc.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
}

std::string readOwnPasswd() {
    // In the container, as its process, resolved in its root with no magic
    // link (no /proc/self/fd/N out of it); held O_PATH and judged by fstat
    // first, so neither a FIFO nor a device there is opened to read.
    UniqueFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    return root ? readImagePasswd(root.get()) : "";
}

bool envHasHome(const std::vector<std::string>& env) {
    // The last HOME decides, as the environment's last value does; an empty
    // one is none, as runc reads it (os.Getenv): podman's exec sends
    // "HOME=" for a user the image's passwd lacks.
    for (auto e = env.rbegin(); e != env.rend(); ++e)
        if (e->starts_with("HOME=")) return e->size() > 5;
    return false;
}

void keepLastHome(std::vector<std::string>& env) {
    // The process reads the first (getenv); runc sets each in turn, so the
    // last is the one it means.
    auto last = std::find_if(env.rbegin(), env.rend(),
                             [](const std::string& e) { return e.starts_with("HOME="); });
    if (last == env.rend()) return;
    const std::string kept = *last;
    std::erase_if(env, [](const std::string& e) { return e.starts_with("HOME="); });
    env.push_back(kept);
}

void addHomeIfMissing(std::vector<std::string>& env, uid_t uid, const std::string& passwd) {
    if (envHasHome(env)) return keepLastHome(env);
    std::erase_if(env, [](const std::string& e) { return e.starts_with("HOME="); });
    env.push_back("HOME=" + homeOfUid(passwd, uid));
}

}  // namespace stockade::oci
