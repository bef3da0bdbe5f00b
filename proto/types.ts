/**
 * Short names for the decoded form of the messages other modules handle most, e.g. `CommandBody` for
 * `Decoded<typeof bcd.v1.CommandBody>`. What encoders accept is `Props<typeof bcd.v1.X>`.
 *
 * @module
 */

import type { bcd } from "./gen/bcd.js";
import type { Decoded } from "./wire.ts";

type D<C> = Decoded<C>;
type v1 = typeof bcd.v1;

export type Hello = D<v1["Hello"]>;
export type Welcome = D<v1["Welcome"]>;
export type Challenge = D<v1["Challenge"]>;
export type Heartbeat = D<v1["Heartbeat"]>;
export type DesiredState = D<v1["DesiredState"]>;
export type DesiredStateBody = D<v1["DesiredStateBody"]>;
export type SpecRequest = D<v1["SpecRequest"]>;
export type StatusReport = D<v1["StatusReport"]>;
export type SectionStatus = D<v1["SectionStatus"]>;
export type Condition = D<v1["Condition"]>;
export type InstanceStatus = D<v1["InstanceStatus"]>;
export type Command = D<v1["Command"]>;
export type CommandBody = D<v1["CommandBody"]>;
export type CommandUpdate = D<v1["CommandUpdate"]>;
export type Cancel = D<v1["Cancel"]>;
export type Ack = D<v1["Ack"]>;
export type EventBatch = D<v1["EventBatch"]>;
export type WireEvent = D<v1["Event"]>;
export type AttestedReport = D<v1["AttestedReport"]>;
export type ReportBody = D<v1["ReportBody"]>;
export type JoinRequest = D<v1["JoinRequest"]>;
export type JoinResponse = D<v1["JoinResponse"]>;
export type TrustBundle = D<v1["TrustBundle"]>;
export type SignedCertificate = D<v1["SignedCertificate"]>;
export type Certificate = D<v1["Certificate"]>;
export type DeviceAssignment = D<v1["DeviceAssignment"]>;
export type InstanceSpec = D<v1["InstanceSpec"]>;
export type Inventory = D<v1["Inventory"]>;
