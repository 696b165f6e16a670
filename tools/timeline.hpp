// `neat timeline`: renders a conversion trace as a PNG timeline, one row per
// track (stage, or thread when no stage was set), one box per conversion
// (red: pack, blue: convert, green: transfer), width = duration.
#pragma once

#include <string>
#include <vector>

#include <neat/telemetry/audit.hpp>

namespace neat::tools {

/// Draws `records` into `png_path`; returns an empty string or an error message.
std::string render_timeline(const std::vector<AuditRecord>& records, const std::string& png_path,
                            int width);

}  // namespace neat::tools
