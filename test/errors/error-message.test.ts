import { describe, expect, it } from 'vitest';
import { errorLine, errorMessage } from '../../src/errors/error-message.js';

describe('errorLine', () => {
  it('keeps the first line of an Error, a rejection of any value, or an empty message', () => {
    expect(errorLine(new Error('HTTP-Code: 500\nMessage: Unknown API Status Code!\nBody: {"huge":"..."}'))).toBe(
      'HTTP-Code: 500',
    );
    expect(errorLine('plain\ntext')).toBe('plain');
    expect(errorLine(42)).toBe('42');
    expect(errorLine(new Error(''))).toBe('');
  });

  it('is the message itself when it has one line', () => {
    const error = new Error('connect ECONNREFUSED 127.0.0.1:6443');
    expect(errorLine(error)).toBe(errorMessage(error));
  });
});
