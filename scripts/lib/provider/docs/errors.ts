import { InputError } from '../../../../src/protocol/errors';

/**
 * Collects validation problems of a docs file, each with the JSON path
 * where it is and what to do, and throws them together as one InputError.
 */
export class DocsProblems {
  private readonly problems: string[] = [];

  constructor(private readonly file: string) {}

  add(path: string, message: string): void {
    this.problems.push(`${path}: ${message}`);
  }

  get count(): number {
    return this.problems.length;
  }

  /** Throws InputError listing the first 20 problems when there are any. */
  throwIfAny(): void {
    if (this.problems.length === 0) return;
    const shown = this.problems
      .slice(0, 20)
      .map((p) => `  ${p}`)
      .join('\n');
    const more = this.problems.length > 20 ? `\n  … and ${this.problems.length - 20} more` : '';
    throw new InputError(`docs ${this.file}: ${this.problems.length} problem${this.problems.length === 1 ? '' : 's'}; nothing was published:\n${shown}${more}`);
  }
}

// Terraform identifiers, and the specification's lower-case rule for names.
export const LOWER_IDENTIFIER = /^[a-z_][a-z0-9_-]*$/;

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function optionalString(value: unknown, path: string, problems: DocsProblems): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    problems.add(path, `must be a string, not ${JSON.stringify(value)?.slice(0, 40)}`);
    return undefined;
  }
  return value === '' ? undefined : value;
}
