// Types for `cloudflare:workers` in the Worker tests: our bindings and our main module's exports.
declare namespace Cloudflare {
  interface Env extends import('../src/env').Env {}
  interface GlobalProps {
    mainModule: typeof import('../src/index');
  }
}
