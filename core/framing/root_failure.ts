/**
 * Ready and RootFailure (seed 002 §Root configurations, §Ready): the guest's answers to a root configuration.
 *
 * @module
 */
import { BodyError } from "./errors.ts";
import { BodyReader, BodyWriter, encodeUtf8, utf8 } from "./_bytes.ts";

/** A stage of the root, by its seed name. */
export type RootStage = "configuration" | "layout" | "bootstrap" | "assembly" | "teardown";

/** One row of the stage table: the stage's code and the worker's exit status when it fails. */
export interface StageSpec {
  readonly code: number;
  readonly stage: RootStage;
  readonly status: number;
}

/** The seed's stage table. */
export const ROOT_STAGES: readonly StageSpec[] = [
  { code: 1, stage: "configuration", status: 11 },
  { code: 2, stage: "layout", status: 12 },
  { code: 3, stage: "bootstrap", status: 13 },
  { code: 4, stage: "assembly", status: 14 },
  { code: 5, stage: "teardown", status: 15 },
];

/** The row of a stage. */
export function stageSpec(stage: RootStage): StageSpec {
  return ROOT_STAGES.find((s) => s.stage === stage)!;
}

/** A failed stage of the root: its stage, then the problem. */
export interface RootFailure {
  readonly stage: RootStage;
  readonly problem: string;
}

/** Encodes a RootFailure: the stage's code, one byte, then the problem as UTF-8. */
export function encodeRootFailure(f: RootFailure): Uint8Array {
  const problem = encodeUtf8(f.problem);
  return new BodyWriter(1 + problem.length).u8(stageSpec(f.stage).code).bytesOf(problem).done();
}

/** Decodes a RootFailure; refuses an unknown stage code or a problem that is not UTF-8. */
export function decodeRootFailure(body: Uint8Array): RootFailure {
  const r = new BodyReader(body, "root-failure");
  const code = r.u8("stage");
  const spec = ROOT_STAGES.find((s) => s.code === code);
  if (spec === undefined) throw new BodyError("root-failure", `stage code ${code} is not 1 to 5`);
  return { stage: spec.stage, problem: utf8(r.rest(), "root-failure") };
}

/** The guest agent's build, as Ready carries it: 1 to 255 printable ASCII characters without a space. */
export function buildProblem(build: string): string | null {
  if (build.length < 1 || build.length > 255) return "is not 1 to 255 characters";
  if (!/^[\x21-\x7e]+$/.test(build)) return "holds a character that is not printable ASCII or a space";
  return null;
}

/** Encodes Ready: the build's length, one byte, then the build. */
export function encodeReady(build: string): Uint8Array {
  const p = buildProblem(build);
  if (p !== null) throw new BodyError("ready", `build ${JSON.stringify(build)} ${p}`);
  return new BodyWriter(1 + build.length).u8(build.length).bytesOf(encodeUtf8(build)).done();
}

/** Decodes Ready into the guest agent's build. */
export function decodeReady(body: Uint8Array): string {
  const r = new BodyReader(body, "ready");
  const n = r.u8("length");
  const build = utf8(r.take(n, "build"), "ready");
  r.end();
  const p = buildProblem(build);
  if (p !== null) throw new BodyError("ready", `build ${JSON.stringify(build)} ${p}`);
  return build;
}
