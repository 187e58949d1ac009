/**
 * Whether process `pid` exists on this host: false only when the OS says
 * there is no such process (ESRCH) or `pid` is not a positive integer; a
 * live process of another user (EPERM) exists. The leases, the local state
 * lock and mirror sync's scratch folders ask it before taking over what a
 * dead process left.
 */
export function processExists(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
