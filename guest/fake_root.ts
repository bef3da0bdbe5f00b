/**
 * A fake layered root for tests of the worker: it records each operation, fails the stage a test names, answers
 * probes from a table, and can fail its teardown or a mapping.
 *
 * @module
 */
import type { Facts, Mapping, Probe, RootConfig, RootStage } from "../core/framing/mod.ts";
import { MappingFailed, ProbeProblem, type RootOperations, StageFailed } from "./root_ops.ts";
import { parseLayout, type RootLayout } from "./root_layout.ts";

/** Options of a {@link FakeRoot}. */
export interface FakeRootOptions {
  /** The kernel command line the layout stage reads. */
  readonly cmdline?: string;
  /** A stage that fails. */
  readonly failStage?: RootStage;
  /** Milliseconds the assembly takes. */
  readonly assemblyMs?: number;
  /** The index of a mapping that fails to apply. */
  readonly failMapping?: number;
}

/** The command line of an EROFS image over a scratch. */
export const EROFS_OVER_SCRATCH = "console=hvc0 nvx_sandbox=1 nvx_layer=distro,0xd0003000,erofs:1234 " +
  "nvx_scratch=0xd0006000,ext4";

/** A root that lives in memory. */
export class FakeRoot implements RootOperations {
  readonly ops: string[] = [];
  readonly mapped: Mapping[] = [];
  config: RootConfig | null = null;
  layout: RootLayout | null = null;
  mounted = false;

  constructor(readonly opts: FakeRootOptions = {}) {}

  #stage(stage: RootStage): void {
    this.ops.push(stage);
    if (this.opts.failStage === stage) throw new StageFailed(stage, `the fake ${stage} fails`);
  }

  readLayout(): Promise<RootLayout> {
    this.#stage("layout");
    return Promise.resolve(parseLayout(this.opts.cmdline ?? EROFS_OVER_SCRATCH));
  }

  bootstrap(config: RootConfig): Promise<void> {
    this.#stage("bootstrap");
    this.config = config;
    return Promise.resolve();
  }

  async assemble(_config: RootConfig, layout: RootLayout): Promise<void> {
    if (this.opts.assemblyMs) await new Promise((r) => setTimeout(r, this.opts.assemblyMs));
    this.#stage("assembly");
    this.layout = layout;
    this.mounted = true;
  }

  probe(p: Probe): Promise<Facts> {
    this.ops.push(`probe ${[p.name, ...p.args].join(" ")}`);
    if (p.name === "mounts") {
      const l = this.layout!;
      const facts: [string, string][] = [
        ["distro.type", "erofs"],
        ["distro.format", l.image.format],
        ["upper.kind", l.upper.kind],
        ["root.type", "overlay"],
        ["root.mode", this.config?.overlayMode ?? "trusted-lowers"],
      ];
      if (l.image.format === "gpt") {
        facts.push(["first-partition.bound", String(this.config?.firstPartitionBound ?? 65536n)]);
      }
      return Promise.resolve(facts);
    }
    if (p.name === "echo-args") return Promise.resolve(p.args.map((a, i) => [`arg${i}`, a] as const));
    return Promise.reject(new ProbeProblem(`unknown probe ${p.name}`));
  }

  applyMapping(m: Mapping): Promise<void> {
    if (this.opts.failMapping === this.mapped.length) {
      return Promise.reject(new MappingFailed(`the fake refuses ${new TextDecoder().decode(m.target)}`));
    }
    this.mapped.push(m);
    this.ops.push("map");
    return Promise.resolve();
  }

  startWorkloads(): Promise<void> {
    this.ops.push("start");
    return Promise.resolve();
  }

  teardown(): Promise<void> {
    this.#stage("teardown");
    this.mounted = false;
    return Promise.resolve();
  }

  release(): Promise<void> {
    this.ops.push("release");
    this.mounted = false;
    return Promise.resolve();
  }
}
