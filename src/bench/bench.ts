export async function runBench(_o: unknown) {}
