// nftables rulesets for the veth backend of `stockade serve`, applied by the
// `nft` binary (Debian package nftables) fed on stdin: `nft -f -` applies a
// file as one transaction, so a ruleset holds entirely or not at all.
// libnftables cannot be linked instead: Debian ships it shared only, and
// stockade is a static PIE (README, "Libraries").
#pragma once

#include <optional>
#include <string>

#include "base/error.h"

namespace stockade {

// The nft binary, looked up in the system directories only (never $PATH: the
// supervisor runs it as root), or nullopt.
std::optional<std::string> findNft();

// Applies `ruleset` in the network namespace of the calling thread; the
// error carries nft's own message.
Status applyNftRuleset(const std::string& ruleset);

}  // namespace stockade
