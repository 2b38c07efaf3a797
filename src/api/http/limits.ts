// The API's limits (../shared/spec/api.md): breaches are 413 too_large with the limit named.
export interface ApiLimits {
  readonly keyBytesMax: number;
  readonly valueBytesMax: number;
  readonly txnOpsMax: number;
  readonly requestBytesMax: number;
}

export const defaultApiLimits: ApiLimits = {
  keyBytesMax: 4096,
  valueBytesMax: 1024 * 1024,
  txnOpsMax: 128,
  requestBytesMax: 1.5 * 1024 * 1024,
};
