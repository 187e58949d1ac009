// What `--json` prints: the publish API's own result shape (src/protocol/publish-api.ts), for every way in.
export type { ProviderPublishResult as PublishResult, PublishedPlatform } from '../../../src/protocol/publish-api';
