// What a sentinel's answer to SENTINEL REPLICAS says: the transport reads it to learn whether a
// Sentinel member's votes must wait for a replica, and `doctor` to judge whether a failover of the
// group would keep its locks.
#pragma once

#include <string>

#include "core/net/resp.hpp"

namespace redlock {

// The replicas the sentinels could promote, whatever their link to the master is now, from the
// answer to SENTINEL REPLICAS: those the sentinels have seen replicating count, down ones too until
// 10 x down-after-milliseconds (the longest link outage after which Sentinel still promotes one
// that comes back). Not an entry they have never read (master-host "?": an old master added at a
// failover, dead or not yet turned replica, which syncs before it can be promoted), nor one that
// says it is a master. An answer that is no list of replicas (a refusal) counts none.
int promotable_replicas(const Reply& reply);

}  // namespace redlock
