/**
 * The R2 lifecycle rules the deploy creates: objects under these prefixes
 * are garbage after a while, and R2 deletes them without a request of ours.
 * Each is a backstop: the Worker refuses every one of them once expired
 * (and sweeps abandoned uploads itself, src/store/uploads/session.ts).
 */
export const LIFECYCLE_RULES = [
  {
    name: 'edge-registry-uploads',
    prefix: '.uploads/',
    expireDays: 2,
    abortMultipartDays: 2,
    what: 'publish API uploads: sessions expire after 24 h',
  },
  { name: 'edge-registry-ci-token-uses', prefix: '.ci-token-uses/', expireDays: 1, what: 'used CI tokens: useless once the token expired' },
  { name: 'edge-registry-login-codes', prefix: '.login-codes/', expireDays: 1, what: 'unredeemed login codes: refused after 2 minutes' },
  {
    name: 'edge-registry-ended-sessions',
    prefix: '.ended-sessions/',
    expireDays: 1,
    what: 'sign-out markers: needed only until the session would have expired (12 h)',
  },
] as const;
