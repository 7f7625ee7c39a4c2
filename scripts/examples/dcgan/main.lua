-- pytorch/examples dcgan/main.py ported to nnrepl: a DCGAN (Radford et al.) trained on
-- images, line by line as the original (the networks are in model.lua beside this file).
--
--   nnrepl scripts/examples/dcgan/main.lua --dataset fake --dry-run
--   nnrepl scripts/examples/dcgan/main.lua --dataset mnist --dataroot DIR --accel --niter 5
--
-- Same flags, prints and files as the original: the per-iteration line
-- "[epoch/niter][i/len] Loss_D: ... Loss_G: ... D(x): ... D(G(z)): ... / ...",
-- OUTF/real_samples.png and OUTF/fake_samples_epoch_NNN.png every 100 iterations,
-- OUTF/netG_epoch_N.pth and OUTF/netD_epoch_N.pth (safetensors, PyTorch's keys) each epoch.
-- Differences from the original:
-- * nothing is downloaded: --dataset mnist reads MNIST's IDX files from DATAROOT (or
--   DATAROOT/MNIST/raw), cifar10 the binary batches from DATAROOT/cifar-10-batches-bin;
--   when they are missing the error says which files to put where. folder, imagenet and lfw
--   read a folder of class folders of images (ImageFolder), fake needs no data.
-- * --dataset lsun is refused with an error: nnrepl's torchvision has no LSUN (LMDB) reader;
--   export the images into class folders and use --dataset folder.
-- * the networks take nz, ngf, ndf and nc as constructor arguments (Python reads globals).
local argparse = require "argparse"
local torchvision = require "torchvision"
local random = require "random"
local dset = torchvision.datasets
local transforms = torchvision.transforms
local vutils = torchvision.utils
local model = require "model"
local Generator, Discriminator, weights_init = model.Generator, model.Discriminator, model.weights_init

local parser = argparse.ArgumentParser()
parser:add_argument("--dataset", { required = true, help = "cifar10 | lsun | mnist |imagenet | folder | lfw | fake" })
parser:add_argument("--dataroot", { required = false, help = "path to dataset" })
parser:add_argument("--workers", { type = "int", help = "number of data loading workers", default = 2 })
parser:add_argument("--batchSize", { type = "int", default = 64, help = "input batch size" })
parser:add_argument("--imageSize", { type = "int", default = 64, help = "the height / width of the input image to network" })
parser:add_argument("--nz", { type = "int", default = 100, help = "size of the latent z vector" })
parser:add_argument("--ngf", { type = "int", default = 64, help = "number of generator filters" })
parser:add_argument("--ndf", { type = "int", default = 64, help = "number of discriminator filters" })
parser:add_argument("--niter", { type = "int", default = 25, help = "number of epochs to train for" })
parser:add_argument("--lr", { type = "float", default = 0.0002, help = "learning rate, default=0.0002" })
parser:add_argument("--beta1", { type = "float", default = 0.5, help = "beta1 for adam. default=0.5" })
parser:add_argument("--dry-run", { action = "store_true", help = "check a single training cycle works" })
parser:add_argument("--ngpu", { type = "int", default = 1, help = "number of GPUs to use" })
parser:add_argument("--netG", { default = "", help = "path to netG (to continue training)" })
parser:add_argument("--netD", { default = "", help = "path to netD (to continue training)" })
parser:add_argument("--outf", { default = ".", help = "folder to output images and model checkpoints" })
parser:add_argument("--manualSeed", { type = "int", help = "manual seed" })
parser:add_argument("--classes", { default = "bedroom", help = "comma separated list of classes for the lsun data set" })
parser:add_argument("--accel", { action = "store_true", default = false, help = "enables accelerator" })

local opt = parser:parse_args()
print(opt)

-- os.makedirs(opt.outf), an existing folder being fine
os.execute("mkdir -p '" .. opt.outf:gsub("'", "'\\''") .. "' 2>/dev/null")

if opt.manualSeed == nil then
  opt.manualSeed = random.randint(1, 10000)
end
print(string.format("Random Seed:  %d", opt.manualSeed)) -- Python's print("Random Seed: ", n)
random.seed(opt.manualSeed)
torch.manual_seed(opt.manualSeed)

torch.backends.cudnn.benchmark = true

local device
if opt.accel and torch.accelerator.is_available() then
  device = torch.accelerator.current_accelerator()
else
  device = torch.device("cpu")
end

print(string.format("Using device: %s", device))

if opt.dataroot == nil and opt.dataset:lower() ~= "fake" then
  error(string.format('`dataroot` parameter is required for dataset "%s"', opt.dataset), 0)
end

local dataset, nc
if opt.dataset == "imagenet" or opt.dataset == "folder" or opt.dataset == "lfw" then
  -- folder dataset
  dataset = dset.ImageFolder({ root = opt.dataroot,
    transform = transforms.Compose({
      transforms.Resize(opt.imageSize),
      transforms.CenterCrop(opt.imageSize),
      transforms.ToTensor(),
      transforms.Normalize({ 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 }),
    }) })
  nc = 3
elseif opt.dataset == "lsun" then
  error("--dataset lsun: nnrepl's torchvision has no LSUN (LMDB) reader; export the images of the classes "
    .. opt.classes .. " into DATAROOT/<class>/ folders and use --dataset folder", 0)
elseif opt.dataset == "cifar10" then
  dataset = dset.CIFAR10({ root = opt.dataroot, download = true,
    transform = transforms.Compose({
      transforms.Resize(opt.imageSize),
      transforms.ToTensor(),
      transforms.Normalize({ 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 }),
    }) })
  nc = 3
elseif opt.dataset == "mnist" then
  dataset = dset.MNIST({ root = opt.dataroot, download = true,
    transform = transforms.Compose({
      transforms.Resize(opt.imageSize),
      transforms.ToTensor(),
      transforms.Normalize({ 0.5 }, { 0.5 }),
    }) })
  nc = 1
elseif opt.dataset == "fake" then
  dataset = dset.FakeData({ image_size = { 3, opt.imageSize, opt.imageSize },
    transform = transforms.ToTensor() })
  nc = 3
end

assert(dataset, "unknown --dataset " .. opt.dataset .. " (cifar10 | lsun | mnist | imagenet | folder | lfw | fake)")
local dataloader = torch.utils.data.DataLoader(dataset, { batch_size = opt.batchSize,
  shuffle = true, num_workers = opt.workers })

local ngpu = opt.ngpu
local nz = opt.nz
local ngf = opt.ngf
local ndf = opt.ndf

local netG = Generator(ngpu, nz, ngf, nc):to(device)
netG:apply(weights_init)
if opt.netG ~= "" then
  netG:load_state_dict(torch.load(opt.netG))
end
print(netG)

local netD = Discriminator(ngpu, ndf, nc):to(device)
netD:apply(weights_init)
if opt.netD ~= "" then
  netD:load_state_dict(torch.load(opt.netD))
end
print(netD)

local criterion = nn.BCELoss()

local fixed_noise = torch.randn(opt.batchSize, nz, 1, 1, { device = device })
local real_label = 1
local fake_label = 0

-- setup optimizer
local optimizerD = optim.Adam(netD:parameters(), { lr = opt.lr, betas = { opt.beta1, 0.999 } })
local optimizerG = optim.Adam(netG:parameters(), { lr = opt.lr, betas = { opt.beta1, 0.999 } })

if opt.dry_run then
  opt.niter = 1
end

for epoch = 0, opt.niter - 1 do
  for i, images in dataloader:enumerate() do
    ------------------------------------------------------------
    -- (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
    ------------------------------------------------------------
    -- train with real
    netD:zero_grad()
    local real_cpu = images:to(device) -- data[0]: the images, the labels unused
    local batch_size = real_cpu:size(0)
    local label = torch.full({ batch_size }, real_label, { dtype = real_cpu.dtype, device = device })

    local output = netD(real_cpu)
    local errD_real = criterion(output, label)
    errD_real:backward()
    local D_x = output:mean():item()

    -- train with fake
    local noise = torch.randn(batch_size, nz, 1, 1, { device = device })
    local fake = netG(noise)
    label:fill_(fake_label)
    output = netD(fake:detach())
    local errD_fake = criterion(output, label)
    errD_fake:backward()
    local D_G_z1 = output:mean():item()
    local errD = errD_real + errD_fake
    optimizerD:step()

    ------------------------------------------------------------
    -- (2) Update G network: maximize log(D(G(z)))
    ------------------------------------------------------------
    netG:zero_grad()
    label:fill_(real_label) -- the generator's cost takes its fakes as real
    output = netD(fake)
    local errG = criterion(output, label)
    errG:backward()
    local D_G_z2 = output:mean():item()
    optimizerG:step()

    print(string.format("[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f",
      epoch, opt.niter, i, #dataloader,
      errD:item(), errG:item(), D_x, D_G_z1, D_G_z2))
    if i % 100 == 0 then
      vutils.save_image(real_cpu,
        string.format("%s/real_samples.png", opt.outf),
        { normalize = true })
      fake = netG(fixed_noise)
      vutils.save_image(fake:detach(),
        string.format("%s/fake_samples_epoch_%03d.png", opt.outf, epoch),
        { normalize = true })
    end

    if opt.dry_run then
      break
    end
  end
  -- do checkpointing
  torch.save(netG:state_dict(), string.format("%s/netG_epoch_%d.pth", opt.outf, epoch))
  torch.save(netD:state_dict(), string.format("%s/netD_epoch_%d.pth", opt.outf, epoch))
end
