#include "picture.hpp"

#include "options.hpp"

namespace chring::cli {

RingPicture ring_picture(const Snapshot &snap, const std::string &title, const std::string &subtitle) {
    RingPicture p;
    p.title = title;
    p.subtitle = subtitle;
    for (const NodeInfo &n : snap.nodes()) p.node_labels.push_back(printable_id(n.id));
    size_t tokens = snap.token_count();
    p.token_values.resize(tokens);
    p.token_owners.resize(tokens);
    for (size_t i = 0; i < tokens; ++i) snap.token(i, p.token_values[i], p.token_owners[i]);
    return p;
}

}  // namespace chring::cli
