#include "oci/groups.h"

#include <charconv>

#include "oci/state.h"

namespace stockade::oci {

bool keepsOriginalGroups(const std::map<std::string, std::string>& annotations) {
    auto it = annotations.find(kKeepOriginalGroups);
    return it != annotations.end() && it->second != "0";
}

Result<bool> setgroupsAllowed(const std::map<std::string, std::string>& annotations,
                              const std::string& profile, bool privileged_writer) {
    auto asked = annotations.find(kSetgroupsAnnotation);
    if (asked != annotations.end() && asked->second != "allow" && asked->second != "deny")
        return Error::message(std::string("config.json: annotations.") + kSetgroupsAnnotation +
                              ": \"" + asked->second + "\" is neither \"allow\" nor \"deny\"");
    const bool denied = asked != annotations.end() && asked->second == "deny";
    return privileged_writer && profile.empty() && !denied;
}

std::vector<IdMap> gidExtentsOf(const ns::IdMapping& ids) {
    if (!ids.gid_ranges.empty()) {
        std::vector<IdMap> out;
        for (const ns::IdRange& r : ids.gid_ranges)
            out.push_back(IdMap{r.inside, r.outside, r.count});
        return out;
    }
    if (ids.count > 1) return {IdMap{0, ids.host_gid - ids.inside_gid, ids.count}};
    return {IdMap{ids.inside_gid, ids.host_gid, 1}};
}

Result<std::vector<IdMap>> parseGidMap(std::string_view text, const char* what) {
    std::vector<IdMap> out;
    while (!text.empty()) {
        size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        uint32_t fields[3];
        size_t at = 0;
        for (uint32_t& field : fields) {
            while (at < line.size() && line[at] == ' ') ++at;
            auto [next, ec] = std::from_chars(line.data() + at, line.data() + line.size(), field);
            if (ec != std::errc{})
                return Error::message(std::string(what) + ": malformed line \"" +
                                      std::string(line) + "\"");
            at = static_cast<size_t>(next - line.data());
        }
        out.push_back(IdMap{fields[0], fields[1], fields[2]});
    }
    return out;
}

std::string describeIdMap(const std::vector<IdMap>& extents) {
    std::string out;
    for (size_t i = 0; i < extents.size(); ++i) {
        const IdMap& e = extents[i];
        if (i) out += i + 1 == extents.size() ? " and " : ", ";
        out += std::to_string(e.container_id);
        if (e.size > 1) out += "-" + std::to_string(uint64_t{e.container_id} + e.size - 1);
    }
    return out.empty() ? "no ids" : "ids " + out;
}

Result<std::vector<gid_t>> hostGroupsFor(const std::vector<gid_t>& gids, gid_t primary,
                                         const std::vector<IdMap>& extents, bool as_root,
                                         bool keep_original, const std::string& field) {
    if (keep_original) {
        if (as_root)
            return Error::message(
                std::string("config.json: annotations.") + kKeepOriginalGroups +
                ": refused as root: the runtime's own groups are host root's, which no "
                "container keeps (G3); list the groups in process.user.additionalGids");
        return std::vector<gid_t>{};
    }
    std::vector<gid_t> out;
    for (gid_t gid : gids) {
        if (!as_root) {
            if (gid == primary) continue;  // held already, as the process's gid
            return Error::message(
                field + ": gid " + std::to_string(gid) +
                ": supplementary groups cannot be set rootless: a user namespace made "
                "without privilege must deny setgroups(2) (user_namespaces(7)), so the "
                "container has only its own gid and the caller's groups; run as root, or "
                "give none (annotation " +
                kKeepOriginalGroups + "=1 keeps the caller's groups, as under crun)");
        }
        bool mapped = false;
        for (const IdMap& e : extents)
            if (gid >= e.container_id && gid - e.container_id < e.size) {
                const gid_t host = static_cast<gid_t>(e.host_id + (gid - e.container_id));
                // Never host root's group, whatever the map says (G3). Under
                // rootless podman with subordinate ids the map is read in
                // podman's namespace, whose gid 0 is the user's own group,
                // not the host's (an image listing root in its groups, as
                // alpine's /etc/group does, sends it).
                if (host == 0 && isHostRoot())
                    return Error::message(field + ": gid " + std::to_string(gid) +
                                          " is host gid 0; stockade never gives a container "
                                          "host root's group");
                out.push_back(host);
                mapped = true;
                break;
            }
        if (!mapped)
            return Error::message(field + ": gid " + std::to_string(gid) +
                                  " is not mapped in the container's gid map, so it would be "
                                  "no group of the container's (it would show as 65534)");
    }
    return out;
}

}  // namespace stockade::oci
