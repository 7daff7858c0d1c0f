// Every value that reaches a remote shell goes through here: single-quoted, so nothing in it is interpreted.
export function quote(value: string | number): string {
  const text = String(value);
  if (text === '') return "''";
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(text)) return text;
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function command(...words: Array<string | number>): string {
  return words.map(quote).join(' ');
}

/** Values we accept from operators for names, versions and paths: no shell metacharacters, no control characters. */
const SAFE_VALUE = /^[A-Za-z0-9._~+:@/=,-]+$/;

export function isSafeValue(value: string): boolean {
  return SAFE_VALUE.test(value);
}
