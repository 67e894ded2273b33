// Prints vitest's JSON report as one plain line, "N passed, N failed" (", N skipped" when any).
import { existsSync, readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file || !existsSync(file)) {
  console.log('0 passed, 1 failed');
  console.error(`test-summary: no report at ${file} (vitest did not finish)`);
  process.exit(1);
}
const r = JSON.parse(readFileSync(file, 'utf8'));
// vitest's exit status, when given: errors outside any test (an unhandled rejection) fail the run
// without failing a test, and the report does not show them (it said "1076 passed, 0 failed" for a
// run that exited 1). They count as one failure here.
const vitestRc = Number(process.argv[3] ?? 0);
let failed = r.numFailedTests + filesFailedWithoutFailedTests(r);
if (failed === 0 && vitestRc !== 0) {
  failed = 1;
  console.error(`test-summary: vitest exited ${vitestRc} with no failed test: errors outside the tests (see "Unhandled Errors" above)`);
}
const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
console.log(`${r.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 ? 1 : 0);

// A file that failed to load (or whose hooks failed) counts as a failure even when it has no
// failed test of its own.
function filesFailedWithoutFailedTests(report) {
  return report.testResults.filter((f) => f.status === 'failed' && !f.assertionResults.some((a) => a.status === 'failed')).length;
}
