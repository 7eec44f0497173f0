// A snapshot's token table as a RingPicture for svg.hpp.
#pragma once

#include <string>

#include "ring_handle.hpp"
#include "svg.hpp"

namespace chring::cli {

RingPicture ring_picture(const Snapshot &snap, const std::string &title, const std::string &subtitle);

}  // namespace chring::cli
