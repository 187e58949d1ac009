import { parseSourceAddress } from '../../../src/protocol/address';
import { parseVersion } from '../../../src/protocol/version';
import { providerLeaseName } from '../../../src/store/layout';
import { withLease } from '../../../src/store/lease';
import { removeMirroredVersion, type RemovedVersion } from '../../../src/store/mirror/remove';
import { audited } from '../audit';
import { say } from '../cli';
import { processLeaseOptions } from '../stores/lease';
import type { StoreHandle } from '../stores/handle';
import { DEFAULT_UPSTREAM } from '../../../src/protocol/mirror-policy';

/**
 * `npm run mirror -- remove HOST/NS/TYPE --version V`: parses the address
 * (NS/TYPE means registry.terraform.io, as sync), takes the provider's lease
 * (the one mirror sync takes) and removes the version
 * (src/store/mirror/remove.ts), leaving an audit entry `mirror.remove` —
 * refusals included. Throws InputError for bad input or a version the mirror
 * does not hold.
 */
export async function removeCommand(
  rawAddress: string,
  rawVersion: string,
  store: StoreHandle,
  ownHostname: string,
  remote: boolean | undefined,
): Promise<RemovedVersion> {
  const address = parseSourceAddress(rawAddress, DEFAULT_UPSTREAM);
  const version = parseVersion(rawVersion);
  const target = `${address.hostname}/${address.namespace}/${address.type} ${version}`;
  const result = await audited(
    { blobs: store.blobs },
    remote,
    { action: 'mirror.remove', target },
    () =>
      withLease(store.blobs, providerLeaseName(address), processLeaseOptions(`mirror remove ${target}`, say), (lease) =>
        removeMirroredVersion(store, address, version, ownHostname, {
          lease,
          progress: ({ step, detail }) => {
            if (step === 'warning') say(`  ${step}: ${detail}`);
          },
        }),
      ),
    (r) => ({ outcome: 'ok', ...(r.files.length ? { reason: `deleted ${r.files.join(', ')}` } : {}) }),
  );
  say(
    `${target}: ${result.status === 'removed' ? 'removed' : 'leftovers of an interrupted removal deleted'} (${result.files.length} files); ` +
      (result.remaining.length ? `the mirror still holds ${result.remaining.join(', ')}` : 'no version of it is left in the mirror'),
  );
  return result;
}
