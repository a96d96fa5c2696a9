// libFuzzer target: parseProfile on arbitrary bytes. It must never crash, and
// whatever it accepts must survive `stockade profile show` | `profile check`:
// profileToJson's output parses again, to the same document.
//
// STOCKADE_FUZZ_NO_ROUNDTRIP=1 checks only that parsing is safe (to keep
// fuzzing the parser while a known round-trip bug is open).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/policy/profile.h"

namespace {

bool checkRoundTrip = true;

[[noreturn]] void failRoundTrip(const std::string& what, const std::string& input,
                                const std::string& shown) {
    std::fprintf(stderr, "profile round trip: %s\n--- input ---\n%s\n--- profileToJson ---\n%s\n",
                 what.c_str(), input.c_str(), shown.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* off = std::getenv("STOCKADE_FUZZ_NO_ROUNDTRIP");
    checkRoundTrip = off == nullptr || std::string(off) != "1";
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    stockade::Result<stockade::Profile> profile = stockade::parseProfile("fuzz", input);
    if (!profile) {
        // Every refusal names the profile it refuses.
        if (profile.error().describe().rfind("profile fuzz: ", 0) != 0) {
            std::fprintf(stderr, "error without the profile's name: %s\n",
                         profile.error().describe().c_str());
            std::abort();
        }
        return 0;
    }
    if (!checkRoundTrip) return 0;
    const std::string shown = stockade::profileToJson(*profile);
    stockade::Result<stockade::Profile> again = stockade::parseProfile("fuzz", shown);
    if (!again) failRoundTrip("refused: " + again.error().describe(), input, shown);
    const std::string shownAgain = stockade::profileToJson(*again);
    if (shownAgain != shown) failRoundTrip("changed on the way back:\n" + shownAgain, input, shown);
    return 0;
}
