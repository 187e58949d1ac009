import type { PublishStep } from '../../src/store/records';

// The progress lines every publish prints (providers, modules, mirror), and their test hooks.

/** Test hook: exit the process just before this publish step (upload, documents, record, index). */
export const CRASH_ENV = 'EDGE_REGISTRY_TEST_CRASH_BEFORE';
/** Test hook: SIGKILL the process at the Nth (default first) report of a step: "upload", "upload#3", "index". */
export const KILL_ENV = 'EDGE_REGISTRY_TEST_KILL_AT';

/**
 * The progress lines of a publish (providers and modules), with the test
 * hooks CRASH_ENV (exit before a step) and KILL_ENV (SIGKILL at a step).
 */
export function progressLog(
  log: (line: string) => void,
  crashBefore?: string,
  killAt?: string,
): (event: { step: PublishStep | 'commit-sent'; detail: string }) => void {
  const seen = new Map<string, number>();
  const [killStep, killNth] = (killAt ?? '').split('#');
  return (event) => {
    const count = (seen.get(event.step) ?? 0) + 1;
    seen.set(event.step, count);
    if (crashBefore && event.step === crashBefore) {
      log(`${CRASH_ENV}=${crashBefore}: exiting before "${event.step}" (test hook)`);
      process.exit(70);
    }
    if (killStep && event.step === killStep && count === Number(killNth ?? '1')) process.kill(process.pid, 'SIGKILL');
    if (event.step === 'upload') log(`  uploading ${event.detail}`);
    else if (event.step === 'skip-upload') log(`  already stored: ${event.detail}`);
    else if (event.step === 'repair') log(`  REPAIR ${event.detail}`);
    else if (event.step === 'warning') log(`warning: ${event.detail}`);
    else if (event.step === 'commit-sent')
      return; // a point for the kill hook only (registry-api.ts)
    else log(`  ${event.step}: ${event.detail}`);
  };
}
