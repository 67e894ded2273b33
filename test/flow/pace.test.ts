import { describe, expect, it } from 'vitest';
import { Pace } from '../../src/flow/pace.js';

describe('Pace', () => {
  it('resized: grown, the source hears of the room (after the stage heard the new capacity); shrunk, frames inside stay and room comes only below the new capacity', () => {
    const pace = new Pace(1);
    const heard: string[] = [];
    pace.capacity$.subscribe((n) => heard.push(`stage ${n}`));
    pace.onRoom(() => heard.push(`room ${pace.capacity}`));
    pace.enter();
    expect(pace.busy).toBe(true);
    pace.resize(3);
    expect(heard).toEqual(['stage 1', 'stage 3', 'room 3']);
    expect(pace.busy).toBe(false);
    pace.enter();
    pace.enter();
    pace.resize(1); // three inside, room for one: no room until two have left
    pace.resize(1); // the same: nothing heard
    expect(heard).toEqual(['stage 1', 'stage 3', 'room 3', 'stage 1']);
    pace.leave();
    pace.leave();
    expect(pace.busy).toBe(true);
    expect(heard.filter((h) => h.startsWith('room'))).toHaveLength(1);
    pace.leave();
    expect(heard.at(-1)).toBe('room 1');
    expect(pace.busy).toBe(false);
  });

  it('refuses a capacity below 1 or not whole', () => {
    expect(() => new Pace(0)).toThrow(RangeError);
    expect(() => new Pace(1).resize(1.5)).toThrow(RangeError);
  });
});
