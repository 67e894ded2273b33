/** Monotonic milliseconds (performance.now()): every age and interval on the page is measured with it. */
export const now = () => performance.now();
