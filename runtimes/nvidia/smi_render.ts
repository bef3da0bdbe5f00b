/**
 * Writes an inventory the way `nvidia-smi -q -x` (v12 DTD, driver 550 layout, tab-indented) and `nvidia-smi -L`
 * print it. The sim role's fake GPU tool answers through it, and the fixtures in `fixtures/nvidia/` were made with
 * it, so the parser always reads the real shape. Fields bcd does not read carry plausible H100 values.
 *
 * @module
 */
import type { GpuInfo, GpuInventory } from "../../core/converge/devices/inventory.ts";

function _esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function _na(v: number | undefined): string {
  return v === undefined ? "N/A" : String(v);
}

function _migDevice(m: GpuInfo["migInstances"][number]): string {
  const sm = m.profile?.startsWith("7g")
    ? 132
    : m.profile?.startsWith("3g")
    ? 60
    : m.profile?.startsWith("2g")
    ? 32
    : 16;
  const mem = m.profile?.match(/\.(\d+)gb/)?.[1] ?? "10";
  return `\t\t\t<mig_device>
\t\t\t\t<index>${m.index}</index>
\t\t\t\t<gpu_instance_id>${m.gi}</gpu_instance_id>
\t\t\t\t<compute_instance_id>${m.ci}</compute_instance_id>
\t\t\t\t<device_attributes>
\t\t\t\t\t<shared>
\t\t\t\t\t\t<multiprocessor_count>${sm}</multiprocessor_count>
\t\t\t\t\t\t<copy_engine_count>1</copy_engine_count>
\t\t\t\t\t\t<encoder_count>0</encoder_count>
\t\t\t\t\t\t<decoder_count>1</decoder_count>
\t\t\t\t\t\t<ofa_count>0</ofa_count>
\t\t\t\t\t\t<jpg_count>1</jpg_count>
\t\t\t\t\t</shared>
\t\t\t\t</device_attributes>
\t\t\t\t<ecc_error_count>
\t\t\t\t\t<volatile_count>
\t\t\t\t\t\t<sram_uncorrectable>0</sram_uncorrectable>
\t\t\t\t\t</volatile_count>
\t\t\t\t</ecc_error_count>
\t\t\t\t<fb_memory_usage>
\t\t\t\t\t<total>${Number(mem) * 1024 - 256} MiB</total>
\t\t\t\t\t<reserved>0 MiB</reserved>
\t\t\t\t\t<used>12 MiB</used>
\t\t\t\t\t<free>${Number(mem) * 1024 - 268} MiB</free>
\t\t\t\t</fb_memory_usage>
\t\t\t\t<bar1_memory_usage>
\t\t\t\t\t<total>32767 MiB</total>
\t\t\t\t\t<used>0 MiB</used>
\t\t\t\t\t<free>32767 MiB</free>
\t\t\t\t</bar1_memory_usage>
\t\t\t</mig_device>
`;
}

function _gpu(g: GpuInfo, serial: number): string {
  const [dom, bus, devfn] = g.pciBusId.split(":") as [string, string, string];
  const ecc = g.eccVolatileUncorrectable;
  const remap = g.remap;
  const mig = g.migInstances.length ? `\n${g.migInstances.map(_migDevice).join("")}\t\t` : "\n\t\t\tNone\n\t\t";
  const yn = (b: boolean | undefined) => b === undefined ? "N/A" : b ? "Yes" : "No";
  return `\t<gpu id="${g.pciBusId}">
\t\t<product_name>${_esc(g.productName ?? "NVIDIA H100 80GB HBM3")}</product_name>
\t\t<product_brand>NVIDIA</product_brand>
\t\t<product_architecture>Hopper</product_architecture>
\t\t<display_mode>Disabled</display_mode>
\t\t<display_active>Disabled</display_active>
\t\t<persistence_mode>Enabled</persistence_mode>
\t\t<addressing_mode>None</addressing_mode>
\t\t<mig_mode>
\t\t\t<current_mig>${g.migMode}</current_mig>
\t\t\t<pending_mig>${g.migPending ?? g.migMode}</pending_mig>
\t\t</mig_mode>
\t\t<mig_devices>${mig}</mig_devices>
\t\t<accounting_mode>Disabled</accounting_mode>
\t\t<accounting_mode_buffer_size>4000</accounting_mode_buffer_size>
\t\t<driver_model>
\t\t\t<current_dm>N/A</current_dm>
\t\t\t<pending_dm>N/A</pending_dm>
\t\t</driver_model>
\t\t<serial>${1654923012000 + serial}</serial>
\t\t<uuid>${g.uuid}</uuid>
\t\t<minor_number>${_na(g.minorNumber)}</minor_number>
\t\t<vbios_version>96.00.89.00.01</vbios_version>
\t\t<multigpu_board>No</multigpu_board>
\t\t<board_id>0x${bus.toLowerCase()}00</board_id>
\t\t<board_part_number>692-2G520-0200-000</board_part_number>
\t\t<gpu_part_number>2330-885-A1</gpu_part_number>
\t\t<gpu_fru_part_number>N/A</gpu_fru_part_number>
\t\t<gpu_module_id>${serial + 1}</gpu_module_id>
\t\t<gpu_virtualization_mode>
\t\t\t<virtualization_mode>None</virtualization_mode>
\t\t\t<host_vgpu_mode>N/A</host_vgpu_mode>
\t\t</gpu_virtualization_mode>
\t\t<gpu_reset_status>
\t\t\t<reset_required>${yn(g.resetRequired ?? false)}</reset_required>
\t\t\t<drain_and_reset_recommended>No</drain_and_reset_recommended>
\t\t</gpu_reset_status>
${
    g.recoveryAction
      ? `\t\t<gpu_recovery_action>${_esc(g.recoveryAction)}</gpu_recovery_action>\n`
      : ""
  }\t\t<gsp_firmware_version>550.90.07</gsp_firmware_version>
\t\t<pci>
\t\t\t<pci_bus>${bus}</pci_bus>
\t\t\t<pci_device>${devfn.split(".")[0]}</pci_device>
\t\t\t<pci_domain>${dom.slice(-4)}</pci_domain>
\t\t\t<pci_base_class>3</pci_base_class>
\t\t\t<pci_sub_class>2</pci_sub_class>
\t\t\t<pci_device_id>233010DE</pci_device_id>
\t\t\t<pci_bus_id>${g.pciBusId}</pci_bus_id>
\t\t\t<pci_sub_system_id>16C110DE</pci_sub_system_id>
\t\t\t<pci_gpu_link_info>
\t\t\t\t<pcie_gen>
\t\t\t\t\t<max_link_gen>5</max_link_gen>
\t\t\t\t\t<current_link_gen>5</current_link_gen>
\t\t\t\t\t<device_current_link_gen>5</device_current_link_gen>
\t\t\t\t\t<max_device_link_gen>5</max_device_link_gen>
\t\t\t\t\t<max_host_link_gen>5</max_host_link_gen>
\t\t\t\t</pcie_gen>
\t\t\t\t<link_widths>
\t\t\t\t\t<max_link_width>16x</max_link_width>
\t\t\t\t\t<current_link_width>16x</current_link_width>
\t\t\t\t</link_widths>
\t\t\t</pci_gpu_link_info>
\t\t\t<replay_counter>0</replay_counter>
\t\t\t<replay_rollover_counter>0</replay_rollover_counter>
\t\t\t<tx_util>0 KB/s</tx_util>
\t\t\t<rx_util>0 KB/s</rx_util>
\t\t</pci>
\t\t<fan_speed>N/A</fan_speed>
\t\t<performance_state>P0</performance_state>
\t\t<fb_memory_usage>
\t\t\t<total>81559 MiB</total>
\t\t\t<reserved>328 MiB</reserved>
\t\t\t<used>1 MiB</used>
\t\t\t<free>81230 MiB</free>
\t\t</fb_memory_usage>
\t\t<bar1_memory_usage>
\t\t\t<total>131072 MiB</total>
\t\t\t<used>1 MiB</used>
\t\t\t<free>131071 MiB</free>
\t\t</bar1_memory_usage>
\t\t<compute_mode>Default</compute_mode>
\t\t<utilization>
\t\t\t<gpu_util>0 %</gpu_util>
\t\t\t<memory_util>0 %</memory_util>
\t\t\t<encoder_util>0 %</encoder_util>
\t\t\t<decoder_util>0 %</decoder_util>
\t\t\t<jpeg_util>0 %</jpeg_util>
\t\t\t<ofa_util>0 %</ofa_util>
\t\t</utilization>
\t\t<ecc_mode>
\t\t\t<current_ecc>${ecc === undefined ? "N/A" : "Enabled"}</current_ecc>
\t\t\t<pending_ecc>${ecc === undefined ? "N/A" : "Enabled"}</pending_ecc>
\t\t</ecc_mode>
\t\t<ecc_errors>
\t\t\t<volatile>
\t\t\t\t<sram_correctable>${ecc === undefined ? "N/A" : "0"}</sram_correctable>
\t\t\t\t<sram_uncorrectable_parity>${ecc === undefined ? "N/A" : "0"}</sram_uncorrectable_parity>
\t\t\t\t<sram_uncorrectable_secded>${ecc === undefined ? "N/A" : "0"}</sram_uncorrectable_secded>
\t\t\t\t<dram_correctable>${ecc === undefined ? "N/A" : "0"}</dram_correctable>
\t\t\t\t<dram_uncorrectable>${_na(ecc)}</dram_uncorrectable>
\t\t\t</volatile>
\t\t\t<aggregate>
\t\t\t\t<sram_correctable>${ecc === undefined ? "N/A" : "0"}</sram_correctable>
\t\t\t\t<sram_uncorrectable_parity>${ecc === undefined ? "N/A" : "0"}</sram_uncorrectable_parity>
\t\t\t\t<sram_uncorrectable_secded>${ecc === undefined ? "N/A" : "0"}</sram_uncorrectable_secded>
\t\t\t\t<dram_correctable>${ecc === undefined ? "N/A" : "0"}</dram_correctable>
\t\t\t\t<dram_uncorrectable>${_na(ecc)}</dram_uncorrectable>
\t\t\t\t<sram_threshold_exceeded>${ecc === undefined ? "N/A" : "No"}</sram_threshold_exceeded>
\t\t\t</aggregate>
\t\t\t<aggregate_uncorrectable_sram_sources>
\t\t\t\t<sram_l2>${ecc === undefined ? "N/A" : "0"}</sram_l2>
\t\t\t\t<sram_sm>${ecc === undefined ? "N/A" : "0"}</sram_sm>
\t\t\t\t<sram_microcontroller>${ecc === undefined ? "N/A" : "0"}</sram_microcontroller>
\t\t\t\t<sram_pcie>${ecc === undefined ? "N/A" : "0"}</sram_pcie>
\t\t\t\t<sram_other>${ecc === undefined ? "N/A" : "0"}</sram_other>
\t\t\t</aggregate_uncorrectable_sram_sources>
\t\t</ecc_errors>
\t\t<retired_pages>
\t\t\t<multiple_single_bit_retirement>
\t\t\t\t<retired_count>N/A</retired_count>
\t\t\t\t<retired_pagelist>N/A</retired_pagelist>
\t\t\t</multiple_single_bit_retirement>
\t\t\t<double_bit_retirement>
\t\t\t\t<retired_count>N/A</retired_count>
\t\t\t\t<retired_pagelist>N/A</retired_pagelist>
\t\t\t</double_bit_retirement>
\t\t\t<pending_blacklist>N/A</pending_blacklist>
\t\t\t<pending_retirement>N/A</pending_retirement>
\t\t</retired_pages>
\t\t<remapped_rows>
\t\t\t<remapped_row_corr>${remap ? "0" : "N/A"}</remapped_row_corr>
\t\t\t<remapped_row_unc>${remap ? (remap.pending || remap.failed ? "1" : "0") : "N/A"}</remapped_row_unc>
\t\t\t<remapped_row_pending>${yn(remap?.pending)}</remapped_row_pending>
\t\t\t<remapped_row_failure>${yn(remap?.failed)}</remapped_row_failure>
\t\t\t<row_remapper_histogram>
\t\t\t\t<row_remapper_histogram_max>${remap ? "2559 bank(s)" : "N/A"}</row_remapper_histogram_max>
\t\t\t\t<row_remapper_histogram_high>0 bank(s)</row_remapper_histogram_high>
\t\t\t\t<row_remapper_histogram_partial>${
    remap && (remap.pending || remap.failed) ? "1" : "0"
  } bank(s)</row_remapper_histogram_partial>
\t\t\t\t<row_remapper_histogram_low>0 bank(s)</row_remapper_histogram_low>
\t\t\t\t<row_remapper_histogram_none>0 bank(s)</row_remapper_histogram_none>
\t\t\t</row_remapper_histogram>
\t\t</remapped_rows>
\t\t<temperature>
\t\t\t<gpu_temp>${g.temperatureC ?? 31} C</gpu_temp>
\t\t\t<gpu_temp_tlimit>56 C</gpu_temp_tlimit>
\t\t\t<gpu_temp_max_tlimit_threshold>-5 C</gpu_temp_max_tlimit_threshold>
\t\t\t<gpu_temp_slow_tlimit_threshold>-2 C</gpu_temp_slow_tlimit_threshold>
\t\t\t<gpu_temp_max_gpu_tlimit_threshold>0 C</gpu_temp_max_gpu_tlimit_threshold>
\t\t\t<gpu_target_temperature>N/A</gpu_target_temperature>
\t\t\t<memory_temp>38 C</memory_temp>
\t\t\t<gpu_temp_max_mem_tlimit_threshold>0 C</gpu_temp_max_mem_tlimit_threshold>
\t\t</temperature>
\t\t<gpu_power_readings>
\t\t\t<power_state>P0</power_state>
\t\t\t<power_draw>${(g.powerW ?? 71.37).toFixed(2)} W</power_draw>
\t\t\t<current_power_limit>700.00 W</current_power_limit>
\t\t\t<requested_power_limit>700.00 W</requested_power_limit>
\t\t\t<default_power_limit>700.00 W</default_power_limit>
\t\t\t<min_power_limit>200.00 W</min_power_limit>
\t\t\t<max_power_limit>700.00 W</max_power_limit>
\t\t</gpu_power_readings>
\t\t<clocks>
\t\t\t<graphics_clock>1980 MHz</graphics_clock>
\t\t\t<sm_clock>1980 MHz</sm_clock>
\t\t\t<mem_clock>2619 MHz</mem_clock>
\t\t\t<video_clock>1545 MHz</video_clock>
\t\t</clocks>
\t\t<fabric>
\t\t\t<state>Completed</state>
\t\t\t<status>Success</status>
\t\t</fabric>
\t\t<processes>
\t\t</processes>
\t\t<accounted_processes>
\t\t</accounted_processes>
\t</gpu>
`;
}

/** `nvidia-smi -q -x` for `inv`; `timestamp` fixes the `<timestamp>` line. */
export function renderSmiXml(inv: GpuInventory, timestamp = "Mon Nov 30 06:00:00 2026"): string {
  return `<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
\t<timestamp>${timestamp}</timestamp>
\t<driver_version>${inv.driverVersion ?? "550.90.07"}</driver_version>
\t<cuda_version>${inv.cudaVersion ?? "12.4"}</cuda_version>
\t<attached_gpus>${inv.gpus.length}</attached_gpus>
${inv.gpus.map((g, i) => _gpu(g, i)).join("")}</nvidia_smi_log>
`;
}

/** `nvidia-smi -L` for `inv`. */
export function renderSmiList(inv: GpuInventory): string {
  const lines: string[] = [];
  inv.gpus.forEach((g, i) => {
    lines.push(`GPU ${i}: ${g.productName ?? "NVIDIA H100 80GB HBM3"} (UUID: ${g.uuid})`);
    for (const m of [...g.migInstances].sort((a, b) => a.index - b.index)) {
      if (m.uuid) {
        lines.push(
          `  MIG ${(m.profile ?? "1g.10gb").padEnd(11)} Device ${String(m.index).padStart(2)}: (UUID: ${m.uuid})`,
        );
      }
    }
  });
  return lines.join("\n") + "\n";
}
