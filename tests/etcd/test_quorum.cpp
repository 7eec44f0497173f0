// The health checkers' quorum rule (src/cli/etcd/quorum.hpp): a member is
// down when a strict majority of the live checkers list it.
#include <cstdio>
#include <cstdlib>

#include "../../src/cli/etcd/quorum.hpp"

using chring::cli::etcd::quorum_down;
using chring::cli::etcd::quorum_of;
using Views = std::vector<std::set<std::string>>;

static int failed = 0;

static void expect(bool cond, const char *what) {
    if (!cond) {
        std::printf("FAIL: %s\n", what);
        ++failed;
    }
}

int main() {
    expect(quorum_of(1) == 1 && quorum_of(2) == 2 && quorum_of(3) == 2 && quorum_of(4) == 3 && quorum_of(5) == 3,
           "a strict majority: 1 of 1, 2 of 2, 2 of 3, 3 of 4, 3 of 5");
    expect(quorum_down({}).empty(), "no checker: nothing down");
    expect(quorum_down({{"a"}}) == std::map<std::string, size_t>{{"a", 1}}, "one checker decides alone");
    expect(quorum_down({{"a"}, {}, {}}).empty(), "1 of 3: not down");
    expect(quorum_down({{"a"}, {"a"}, {}}) == std::map<std::string, size_t>{{"a", 2}}, "2 of 3: down");
    expect(quorum_down({{"a", "b"}, {"a"}, {"b", "c"}}) == std::map<std::string, size_t>{{"a", 2}, {"b", 2}},
           "each member counted on its own");
    expect(quorum_down({{"a"}, {}}).empty(), "1 of 2: not down (a tie is no majority)");
    expect(quorum_down({{"a"}, {"a"}}).size() == 1, "2 of 2: down");
    expect(quorum_down({{"a"}, {"a"}, {}, {}}).empty(), "2 of 4: not down");
    expect(quorum_down({{"a"}, {"a"}, {"a"}, {}}).size() == 1, "3 of 4: down");
    // A checker that goes (its lease expired) no longer counts either way.
    expect(quorum_down({{"a"}, {"a"}}).size() == 1 && quorum_down({{"a"}, {}}).empty(),
           "recomputed from the live views only");
    std::printf("%s\n", failed ? "quorum: FAILED" : "quorum: ok");
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
