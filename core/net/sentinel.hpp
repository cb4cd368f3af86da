// What a sentinel's answer to SENTINEL REPLICAS says: the transport reads it to learn whether a
// Sentinel member's votes must wait for a replica, and `doctor` to judge whether a failover of the
// group would keep its locks.
#pragma once

#include <string>

#include "core/net/resp.hpp"

namespace redlock {

// The replicas the sentinels could promote, whatever their link to the master is now, from the
// answer to SENTINEL REPLICAS: those the sentinels have seen replicating count, however long they
// have been down: a replica that was stopped (SIGSTOP, a paused VM) never saw its link go down, so
// when it comes back its link looks fresh and Sentinel promotes it without what its master took
// meanwhile. Not an entry they have never read (master-host "?": an old master added at a
// failover, dead or not yet turned replica, which syncs before it can be promoted), nor one that
// says it is a master. An answer that is no list of replicas (a refusal) counts none.
int promotable_replicas(const Reply& reply);

}  // namespace redlock
