#pragma once
// The host-local verbs, on top of the config, the allocator and a Store. The process-level
// wiring (MakePlugin) opens the disk store; the *With functions take any Store so tests can
// run the verbs against a fake.
//
//   ADD    one address per range set (allocator.h), result in the config's version
//   DEL    releases by (container id, ifname), then legacy id-only files, as the reference
//   CHECK  every prevResult address inside our ranges must be held by the container; without
//          such addresses, any reservation of the container will do (the reference's check)
//   GC     releases every reservation whose owner is not in cni.dev/valid-attachments
//   STATUS error 50 when some range set has no free address

#include <vector>

#include "ipam/config.h"
#include "ipam/store.h"
#include "lib/cni/conf.h"
#include "lib/cni/skel.h"
#include "lib/cni/types.h"

namespace nodegate::ipam {

Result<cni::CniResult> AddWith(const IpamConfig& cfg, const Owner& owner, Store& store);
Status DelWith(const IpamConfig& cfg, const Owner& owner, Store& store);
Status CheckWith(const IpamConfig& cfg, const Owner& owner,
                 const std::optional<cni::CniResult>& prev_result, Store& store);
Status GcWith(const std::vector<cni::Attachment>& live, Store& store);
Status StatusWith(const IpamConfig& cfg, Store& store);

// The dispatcher's plugin: name, versions and the five verbs on the disk store.
cni::Plugin MakePlugin();

}  // namespace nodegate::ipam
