export { LeaseExpiryTracker, defaultExpiryTrackerOptions } from './expiry-tracker.js';
export type { ExpiryTrackerOptions, TrackedLease } from './expiry-tracker.js';
export { MinHeap } from './min-heap.js';
