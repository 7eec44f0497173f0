// chring sim --workload: requests against the ring with and without a
// bounded load (chr_snapshot_lookup_bounded), counting the busiest node,
// the share served away from home and the nodes probed per request.
#pragma once

#include <cstdint>
#include <string>

#include "options.hpp"
#include "ring_source.hpp"

namespace chring::cli {

struct LoadSimFlags {
    std::string workload;      // "uniform" or "zipf:S"; empty = no load simulation
    uint64_t requests = 1000000;
    uint64_t in_flight = 1000;
    double balance = 1.25;     // factor, 1.00..1000
    std::string spill = "replicas";
    uint64_t slack = 0;
    uint64_t objects = 100000;  // distinct keys the workload draws from
};

void add_load_options(CLI::App &cmd, LoadSimFlags &flags);

// Runs the simulation on `ring` and writes the report (and --svg picture).
void run_load_sim(const LoadSimFlags &f, LoadedRing &ring, const std::string &members_text,
                  const OutputFlags &output);

}  // namespace chring::cli
