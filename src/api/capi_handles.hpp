// The C handles of rings and snapshots as the C++ objects behind them: the
// one cast each entry point that takes such a handle makes (capi_*.cpp).
#pragma once

#include "chring.h"
#include "ring.hpp"
#include "snapshot.hpp"

namespace chring {

inline Ring *impl(chr_ring *r) { return reinterpret_cast<Ring *>(r); }
inline const Ring *impl(const chr_ring *r) { return reinterpret_cast<const Ring *>(r); }
inline const Snapshot *impl(const chr_snapshot *s) { return reinterpret_cast<const Snapshot *>(s); }

}  // namespace chring
