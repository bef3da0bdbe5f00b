import { MemoryVolumeStore } from "./store.ts";
import { volumeStoreContract } from "./store_contract_testing.ts";

Deno.test("MemoryVolumeStore keeps the volume store contract", async (t) => {
  await volumeStoreContract(t, () => {
    const store = new MemoryVolumeStore();
    return Promise.resolve({ store, write: (id: string, bytes: number) => Promise.resolve(store.write(id, bytes)) });
  });
});
