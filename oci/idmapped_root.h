// The image root of a root-run container, idmapped (issue 19).
//
// As root, a container's ids are a leased block of host ids (G3: never host
// root), which own nothing of a root-owned image: without more, its root
// could write nothing of its own image (apt-get, a server's cache under
// /var) and the image's service users showed as nobody. runc's containers
// are host root and write it. Here the image's root is bound through an
// idmapped mount whose map is the container's own: a file owned by disk id
// N shows as the container's id N, and what the container writes as its id
// N lands on disk as N, so its root writes root's files of the image.
//
// What that lets a container do on the host: make files owned by disk root
// in the image, setuid ones too (chmod is its root's to do on its own
// files). Inside they are inert (the mount is nosuid, and no_new_privs is
// set in every container). On the host they are what a runc container can
// make, and a host user who could reach them could run one. So the root is
// idmapped only when no host user but root can reach the image: one of the
// image directory's ancestors (never the image itself, whose mode its root
// may change once idmapped) is root's and closed to everyone else
// (no search permission for others, nor for a group other than root's, no
// ACL), and likewise an ancestor of the upper directory of an overlay
// mounted there (where the writes land), no other mount showing the image
// or a part of it, and no file of it with a hard link outside it:
// podman's storage and containerd's snapshots are such
// trees. Elsewhere (an image under /var/tmp, a home directory) the root is
// bound as before, unwritable, and create says why.
//
// An overlay (podman's overlay driver, containerd's overlayfs snapshotter,
// the usual storage) cannot itself be idmapped (Linux 6.18: EINVAL), but its
// layers can: such a root is mounted again as an overlay of the container's
// own, over idmapped clones of the engine's lower directories and of its
// upper one (writes land where the engine's own overlay puts them, as disk
// ids), with a work directory of its own beside the upper one, `index=off`.
// The engine's overlay stays mounted at root.path, unused by the container;
// two overlays over one upper directory do not see each other's cached
// entries (the kernel warns once per mount), so what the engine writes
// into the container's root while it runs (`podman cp`) may show late.
// The idmap also maps host root's ids, to the first disk id past the
// container's block: an engine writing as host root into a running
// container (`podman cp` joins its mount namespace alone) lands there,
// nobody's inside, instead of failing EOVERFLOW.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "namespaces/user.h"

namespace stockade::oci {

// Why an overlay root is not remade, or how: its layers as the kernel
// lists them in mountinfo (the topmost lower first), and the options of
// the engine's mount that the container's overlay takes too.
struct OverlayLayers {
    std::vector<std::string> lowers;
    std::string upper;
    std::string work;
    std::vector<std::pair<std::string, std::string>> kept;  // key, value ("" for a flag)
    std::string unsupported;  // an option this does not remake, "" when none
};
OverlayLayers overlayLayersOf(const std::string& super_options);

// Whether no host user but root can reach the directory held at `dir_fd`
// (any fd of it): it or an ancestor, up to the root of this mount
// namespace, is owned by root with neither other nor non-root group search
// permission and no access ACL. When not, `why` says which directory is
// the nearest the check could not close.
bool closedToOthers(int dir_fd, std::string& why);

// The upper directory of the overlay mounted at the directory held at
// `dir_fd`, from /proc/self/mountinfo: "" when that directory is no
// overlay's root (or its options cannot be read).
std::string overlayUpperDir(int dir_fd);

// The image root held at `root_fd` (at `path`, for messages) as a detached,
// recursive clone idmapped with `ids` (the container's leased block:
// inside 0.. onto its host ids), nosuid, nodev and private: or, where the
// image is reachable by other users or its filesystem (or one mounted
// beneath it) cannot be idmapped, the reason, for create to say.
// An overlay root is remade only with `work` (otherwise said, and bound as
// it is): its work directory is made beside the upper one as `work->name`,
// after `work->record` has been given its path (create lists it in the
// container's state directory first, so that delete removes it whatever
// happens after: removeOverlayWork).
struct OverlayWork {
    std::string name;
    std::function<Status(const std::string& path)> record;
};
struct IdmappedRoot {
    ns::IdmappedTree tree;  // tree.tree: the detached mount; empty when not made
    std::string not_idmapped;
};
IdmappedRoot idmapImageRoot(int root_fd, const std::string& path, const ns::IdMapping& ids,
                            const OverlayWork* work = nullptr);

// The prefix of every work directory name create gives (".stockade-work-").
inline constexpr const char* kOverlayWorkPrefix = ".stockade-work-";

// Removes the work directory at `path` (as recorded) and what the kernel
// left in it, never following a link; a path whose last component does not
// start with kOverlayWorkPrefix is left alone.
void removeOverlayWork(const std::string& path);

}  // namespace stockade::oci
