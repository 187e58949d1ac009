// oidc-provider ships no type declarations; the local test provider (idp.ts) uses a small part of it.
declare module 'oidc-provider' {
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void;
    proxy: boolean;
    Grant: new (init: {
      clientId: string;
      accountId: string;
    }) => { addOIDCScope(scope: string): void; save(): Promise<string> };
    on(event: string, listener: (...args: unknown[]) => void): void;
  }
}
