// Types for `cloudflare:workers` in the Worker tests: our bindings and our main module's exports.
import type { Env as WorkerEnv } from '../src/env';
import type * as mainModule from '../src/index';

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {}
    interface GlobalProps {
      mainModule: typeof mainModule;
    }
  }
}
