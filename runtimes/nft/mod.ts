/**
 * nftables for tenant network isolation: the {@link Nft} port of `core/netpolicy` implemented by the real `nft`
 * ({@link RealNft}, run by the root helper) and by a fake ({@link FakeNft}) — the node's, over the helper's ops, is
 * `HelperNft` in `runtimes/helper/`, beside the node's other ports over the helper; the host's addresses on the instances' bridges ({@link interfaceAddresses}); and the node's
 * wiring of it all ({@link NodeNetwork}: preparation and `Hello` capabilities, the converger's port, the 5 s timer).
 *
 * @module
 */
export { FakeNft, type FakeNftOptions } from "./fake_nft.ts";
export { type HostAddressSource, interfaceAddresses, netnsAddresses } from "./host_addresses.ts";
export { NETWORK_CAPABILITIES, NodeNetwork, type NodeNetworkOptions, TICK_MS } from "./node_network.ts";
export { MAX_NFT_OUTPUT, NFT_TIMEOUT_MS, type NftRun, RealNft, type RealNftOptions } from "./real_nft.ts";
