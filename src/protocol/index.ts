export * from './errors';
export * from './address';
export * from './platform';
export * from './version';
export * from './constraints';
export * from './hashes';
