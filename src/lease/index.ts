export { LeaseExpiryTracker, defaultExpiryTrackerOptions } from './expiry-tracker.js';
export type { ExpiryTrackerOptions, Renewal, TrackedLease } from './expiry-tracker.js';
export { IndexedMinHeap } from './indexed-heap.js';
export type { HeapSlots } from './indexed-heap.js';
