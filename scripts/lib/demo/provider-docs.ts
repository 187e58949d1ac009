/**
 * The docs `npm run demo` ships with demo/example: a Provider Code
 * Specification (version 0.1) with a provider configuration, resources and a
 * data source covering the attribute kinds the docs pages render (nested
 * attributes and blocks, sensitive, deprecated, computed).
 */
export function demoCodeSpec(version: string): object {
  const s = (mode: string, description: string, extra: object = {}) => ({ computed_optional_required: mode, description, ...extra });
  const major = Number(version.split('.')[0]);
  const resources: object[] = [
    {
      name: 'server',
      description: 'A virtual server. Changing the image or the size replaces the server.',
      schema: {
        attributes: [
          { name: 'name', string: s('required', 'Name of the server, unique in its project.') },
          { name: 'size', string: s('computed_optional', 'Machine size: small, medium or large. Defaults to small.') },
          { name: 'image', string: s('required', 'Image to boot from (see the example_image data source).') },
          { name: 'tags', map: s('optional', 'Labels attached to the server.', { element_type: { string: {} } }) },
          { name: 'ports', list: s('optional', 'TCP ports opened to the world.', { element_type: { int64: {} } }) },
          { name: 'admin_password', string: s('optional', 'Initial administrator password.', { sensitive: true }) },
          {
            name: 'public_ip',
            string: s('optional', "Use the network's address instead.", {
              deprecation_message: 'public_ip is deprecated: read example_network.address instead.',
            }),
          },
          {
            name: 'disks',
            list_nested: s('optional', 'Extra disks.', {
              nested_object: {
                attributes: [
                  { name: 'size_gb', int64: s('required', 'Size in GiB.') },
                  { name: 'encrypted', bool: s('computed_optional', 'Encrypt at rest (default true).') },
                ],
              },
            }),
          },
          { name: 'id', string: s('computed', 'Identifier assigned by the platform.') },
          { name: 'ipv4_address', string: s('computed', 'Private IPv4 address.') },
        ],
        blocks: [
          {
            name: 'network_interface',
            list_nested: {
              description: 'A network the server is attached to.',
              nested_object: {
                attributes: [
                  { name: 'network_id', string: s('required', 'ID of an example_network.') },
                  { name: 'primary', bool: s('optional', 'Whether this is the primary interface.') },
                ],
              },
            },
          },
        ],
      },
    },
    {
      name: 'network',
      description: 'A private network servers attach to.',
      schema: {
        attributes: [
          { name: 'name', string: s('required', 'Name of the network.') },
          { name: 'cidr', string: s('required', 'Address range in CIDR notation, e.g. 10.0.0.0/16.') },
          { name: 'address', string: s('computed', 'Gateway address.') },
          { name: 'id', string: s('computed', 'Identifier assigned by the platform.') },
        ],
      },
    },
  ];
  if (major >= 2) {
    resources.push({
      name: 'bucket',
      description: 'An object storage bucket.',
      schema: {
        attributes: [
          { name: 'name', string: s('required', 'Bucket name.') },
          { name: 'versioning', bool: s('optional', 'Keep every version of every object.') },
          { name: 'id', string: s('computed', 'Identifier assigned by the platform.') },
        ],
      },
    });
  }
  return {
    version: '0.1',
    provider: {
      name: 'example',
      // Not part of the specification's provider object; the docs pages show it as the provider's description.
      description: 'Servers, networks, buckets and images on the Example cloud. A demo published by npm run demo (its executables are not real plugins).',
      schema: {
        attributes: [
          { name: 'endpoint', string: { optional_required: 'optional', description: 'API endpoint; defaults to https://api.example.com.' } },
          {
            name: 'api_token',
            string: { optional_required: 'optional', sensitive: true, description: 'API token; defaults to the EXAMPLE_TOKEN environment variable.' },
          },
        ],
      },
    },
    resources,
    datasources: [
      {
        name: 'image',
        description: 'Looks up an image by name.',
        schema: {
          attributes: [
            { name: 'name', string: s('required', 'Image name, e.g. debian-12.') },
            { name: 'id', string: s('computed', 'Image identifier.') },
            { name: 'created', string: s('computed', 'Creation time (RFC 3339).') },
          ],
        },
      },
    ],
  };
}
