/**
 * nftables for tenant network isolation: the {@link Nft} port of `core/netpolicy` implemented by the real `nft`
 * ({@link RealNft}, run by the root helper), by the helper's ops ({@link HelperNft}, the node's) and by a fake
 * ({@link FakeNft}); the host's addresses on the instances' bridges ({@link interfaceAddresses}).
 *
 * @module
 */
export { FakeNft, type FakeNftOptions } from "./fake_nft.ts";
export { HelperNft } from "./helper_nft.ts";
export { type HostAddressSource, interfaceAddresses, netnsAddresses } from "./host_addresses.ts";
export { MAX_NFT_OUTPUT, NFT_TIMEOUT_MS, type NftRun, RealNft, type RealNftOptions } from "./real_nft.ts";
