#include "core/net/sentinel.hpp"

#include <map>

namespace redlock {

int promotable_replicas(const Reply& reply) {
  int n = 0;
  if (reply.type != Reply::Type::Array) return 0;
  for (const auto& replica : reply.elements) {
    std::map<std::string, std::string> f;
    for (std::size_t k = 0; k + 1 < replica.elements.size(); k += 2) {
      f[replica.elements[k].str] = replica.elements[k + 1].str;
    }
    const bool seen = !f["master-host"].empty() && f["master-host"] != "?";
    n += f["role-reported"] == "slave" && seen ? 1 : 0;
  }
  return n;
}

}  // namespace redlock
