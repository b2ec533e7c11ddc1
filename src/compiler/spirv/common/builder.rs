//! Building a function of a few blocks, for passes that replace an
//! instruction by a call of a function they add (the inline pass then
//! inlines it, where it runs after them).

use rspirv::dr::{Block, Function, Instruction, Operand};
use rspirv::spirv::{FunctionControl, Op, Word};

use crate::compiler::spirv::common::ctx::Ctx;

/// A function under construction: its parameters and finished blocks,
/// and the open block's label and code.
pub struct Builder {
    pub id: Word,
    ty: Word,
    ret: Word,
    params: Vec<Instruction>,
    blocks: Vec<Block>,
    /// The open block's label.
    pub label: Word,
    code: Vec<Instruction>,
}

impl Builder {
    /// A new function returning `ret` with parameters of these types, and
    /// the parameters' ids.
    pub fn new(ctx: &mut Ctx, ret: Word, params: &[Word]) -> (Builder, Vec<Word>) {
        let ty = ctx.function_type(ret, params);
        let ids: Vec<Word> = params.iter().map(|_| ctx.fresh()).collect();
        let b = Builder {
            id: ctx.fresh(),
            ty,
            ret,
            params: params
                .iter()
                .zip(&ids)
                .map(|(&t, &p)| Instruction::new(Op::FunctionParameter, Some(t), Some(p), vec![]))
                .collect(),
            blocks: Vec::new(),
            label: ctx.fresh(),
            code: Vec::new(),
        };
        (b, ids)
    }
    pub fn op(&mut self, ctx: &mut Ctx, op: Op, ty: Word, args: &[Operand]) -> Word {
        let id = ctx.fresh();
        self.code
            .push(Instruction::new(op, Some(ty), Some(id), args.to_vec()));
        id
    }

    /// An instruction defining `id`, which was taken earlier (for a
    /// value a phi names before its definition).
    pub fn define(&mut self, id: Word, op: Op, ty: Word, args: &[Word]) {
        let args: Vec<Operand> = args.iter().map(|&a| Operand::IdRef(a)).collect();
        self.code
            .push(Instruction::new(op, Some(ty), Some(id), args));
    }

    /// A relaxed atomic `op` at device scope on `ptr` with `values` (none
    /// for a load, the value for a store or an add): its result of type
    /// `ty`, or `None` where `ty` is `None` (a store).
    pub fn atomic(
        &mut self,
        ctx: &mut Ctx,
        op: Op,
        ty: Option<Word>,
        ptr: Word,
        values: &[Word],
    ) -> Option<Word> {
        let (device, relaxed) = (ctx.const_u32(1), ctx.const_u32(0));
        let mut args = vec![
            Operand::IdRef(ptr),
            Operand::IdScope(device),
            Operand::IdMemorySemantics(relaxed),
        ];
        args.extend(values.iter().map(|&v| Operand::IdRef(v)));
        match ty {
            Some(ty) => Some(self.op(ctx, op, ty, &args)),
            None => {
                self.void(op, args);
                None
            }
        }
    }

    /// Instructions made elsewhere (by an `Emit`), appended to the open
    /// block.
    pub fn extend(&mut self, code: impl IntoIterator<Item = Instruction>) {
        self.code.extend(code);
    }

    pub fn ids(&mut self, ctx: &mut Ctx, op: Op, ty: Word, args: &[Word]) -> Word {
        let args: Vec<Operand> = args.iter().map(|&a| Operand::IdRef(a)).collect();
        self.op(ctx, op, ty, &args)
    }

    /// A phi of `(value, from block)` pairs.
    pub fn phi(&mut self, ctx: &mut Ctx, ty: Word, incoming: &[(Word, Word)]) -> Word {
        let args: Vec<Operand> = incoming
            .iter()
            .flat_map(|&(v, from)| [Operand::IdRef(v), Operand::IdRef(from)])
            .collect();
        self.op(ctx, Op::Phi, ty, &args)
    }

    /// Member or component `index` of `composite`.
    pub fn extract(&mut self, ctx: &mut Ctx, ty: Word, composite: Word, index: u32) -> Word {
        let args = [Operand::IdRef(composite), Operand::LiteralBit32(index)];
        self.op(ctx, Op::CompositeExtract, ty, &args)
    }

    pub fn void(&mut self, op: Op, args: Vec<Operand>) {
        self.code.push(Instruction::new(op, None, None, args));
    }

    /// Ends the open block with `last` and opens `next`.
    pub fn end_block(&mut self, last: Instruction, next: Word) {
        self.code.push(last);
        let code = std::mem::take(&mut self.code);
        self.blocks.push(Block {
            label: Some(Instruction::new(Op::Label, None, Some(self.label), vec![])),
            instructions: code,
        });
        self.label = next;
    }

    pub fn branch(&mut self, to: Word) {
        self.end_block(
            Instruction::new(Op::Branch, None, None, vec![Operand::IdRef(to)]),
            to,
        );
    }

    /// Ends the open block with a conditional branch; `next` is opened.
    pub fn branch_if(&mut self, cond: Word, yes: Word, no: Word, next: Word) {
        self.end_block(
            Instruction::new(
                Op::BranchConditional,
                None,
                None,
                vec![
                    Operand::IdRef(cond),
                    Operand::IdRef(yes),
                    Operand::IdRef(no),
                ],
            ),
            next,
        );
    }

    pub fn finish(mut self, value: Option<Word>) -> Function {
        let last = match value {
            Some(v) => Instruction::new(Op::ReturnValue, None, None, vec![Operand::IdRef(v)]),
            None => Instruction::new(Op::Return, None, None, vec![]),
        };
        self.end_block(last, 0);
        Function {
            def: Some(Instruction::new(
                Op::Function,
                Some(self.ret),
                Some(self.id),
                vec![
                    Operand::FunctionControl(FunctionControl::NONE),
                    Operand::IdRef(self.ty),
                ],
            )),
            end: Some(Instruction::new(Op::FunctionEnd, None, None, vec![])),
            parameters: self.params,
            blocks: self.blocks,
        }
    }
}
