// libFuzzer target: parseTap on arbitrary bytes (a report is written by the
// code under test). It must never crash, hang or grow past the input, and what
// it accepts must count consistently.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "oracle/report_tap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view xml(reinterpret_cast<const char*>(data), size);
    auto report = stockade::oracle::parseTap(xml);
    if (!report) return 0;
    auto counts = stockade::oracle::countByStatus(*report);
    if (counts.tests != report->cases.size() ||
        counts.passed + counts.failed + counts.errored + counts.skipped != counts.tests)
        std::abort();
    return 0;
}
