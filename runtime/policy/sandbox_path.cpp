#include "runtime/policy/sandbox_path.h"

#include <sstream>

namespace stockade {

Result<std::string> normalizeSandboxPath(const std::string& path) {
    if (path.empty() || path[0] != '/')
        return Error::message("\"" + path + "\" is not an absolute path");
    std::string out;
    std::istringstream parts(path);
    std::string part;
    while (std::getline(parts, part, '/')) {
        if (part.empty() || part == ".") continue;
        if (part == "..") return Error::message("\"" + path + "\" contains \"..\"");
        out += "/" + part;
    }
    return out.empty() ? std::string("/") : out;
}

bool isUnder(const std::string& path, const std::string& dir) {
    if (dir == "/") return true;
    return path == dir ||
           (path.starts_with(dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

}  // namespace stockade
