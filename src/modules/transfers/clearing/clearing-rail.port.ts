/**
 * The clearing rail that carries external transfers. It is told about a new
 * external transfer after it committed; its verdict arrives later through
 * ClearingService.present/settle. The default is the simulator.
 */
export const CLEARING_RAIL = Symbol('CLEARING_RAIL');

export interface ClearingRail {
  submit(transferId: string): Promise<void>;
}
